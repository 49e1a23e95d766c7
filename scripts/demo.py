"""`make demo`: run the demo project against the reference assistant and print the report.

Starts the bundled reference assistant on a free 127.0.0.1 port, runs
`soev-evals run --project examples/demo/project.yaml` against it, and stops it again.
Extra arguments go to `soev-evals run`, e.g. `python scripts/demo.py --k 3`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import reference_assistant

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "examples" / "demo" / "project.yaml"


def main() -> int:
    soev_evals = Path(sys.executable).with_name("soev-evals")
    with reference_assistant() as url:
        print(f"reference assistant at {url}", file=sys.stderr, flush=True)
        env = {**os.environ, "SOEV_DEMO_URL": url}
        command = [str(soev_evals), "run", "--project", str(PROJECT), *sys.argv[1:]]
        return subprocess.call(command, env=env, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
