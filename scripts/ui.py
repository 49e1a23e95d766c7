"""`make ui`: open a project (default: the demo) in the Dagster UI.

Starts the reference assistant so that runs launched from the UI have a system to talk
to, points `DAGSTER_HOME` at the instance the CLI uses for the project (so runs started
with `soev-evals run` show here), and runs `dagster dev -w workspace.yaml`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import reference_assistant

from soev_pipeline.orchestration.launch import ensure_instance
from soev_pipeline.project import ProjectPaths

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    project = Path(os.environ.get("SOEV_PROJECT") or ROOT / "examples" / "demo" / "project.yaml")
    paths = ProjectPaths.of(project, os.environ.get("SOEV_RUNS_DIR") or None)
    project, home = paths.project_file, ensure_instance(paths.dagster_home)
    dagster = Path(sys.executable).with_name("dagster")
    with reference_assistant() as url:
        env = {
            **os.environ,
            "SOEV_DEMO_URL": url,
            "SOEV_PROJECT": str(project),
            "DAGSTER_HOME": str(home),
        }
        print(f"reference assistant at {url}; Dagster instance in {home}", file=sys.stderr)
        command = [str(dagster), "dev", "-w", str(ROOT / "workspace.yaml"), *sys.argv[1:]]
        try:
            return subprocess.call(command, env=env, cwd=ROOT)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
