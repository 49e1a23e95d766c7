"""`make demo`: run the demo project against the reference assistant and print the report.

Starts the bundled reference assistant on a free 127.0.0.1 port, runs
`soev-evals run --project examples/demo/project.yaml` against it, and stops it again.
Then it writes the run's HTML report to examples/demo/report.html and prints the
`soev-evals view` command that opens every run of the demo in a browser.
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
HTML = ROOT / "examples" / "demo" / "report.html"


def _shown(path: Path) -> str:
    """`path` as the user, in the repository's root, types it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _look(soev_evals: Path) -> None:
    """Write the newest run's HTML report and say how to look at every run."""
    from soev_pipeline.project import ProjectPaths, load
    from soev_pipeline.run.compare import latest_run

    paths = ProjectPaths.of(PROJECT)
    run = latest_run(paths.runs, load(PROJECT, definitions=False).project.name)
    if run is None:
        return
    command = [
        str(soev_evals),
        "report",
        run.run_id,
        "--project",
        str(PROJECT),
        "--html",
        str(HTML),
    ]
    if subprocess.call(command, cwd=ROOT, stdout=subprocess.DEVNULL) == 0:
        print(f"\nthe HTML report of run {run.run_id}: {_shown(HTML)}")
    print(
        "look at the runs, case by case, in your browser:\n"
        f"  {_shown(soev_evals)} view --project {_shown(PROJECT)}"
    )


def main() -> int:
    soev_evals = Path(sys.executable).with_name("soev-evals")
    with reference_assistant() as url:
        print(f"reference assistant at {url}", file=sys.stderr, flush=True)
        env = {**os.environ, "SOEV_DEMO_URL": url}
        command = [str(soev_evals), "run", "--project", str(PROJECT), *sys.argv[1:]]
        status = subprocess.call(command, env=env, cwd=ROOT)
    if status == 0:
        _look(soev_evals)
    return status


if __name__ == "__main__":
    sys.exit(main())
