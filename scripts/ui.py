"""`make ui`: open a project (default: the demo) in the Dagster UI.

Starts the reference assistant so that runs launched from the UI have a system to talk
to, and the viewer of the project's runs (`soev-evals view`, whose run pages each report's
metadata links to: `$SOEV_VIEW_URL`), points `DAGSTER_HOME` at the instance the CLI uses
for the project (so runs started with `soev-evals run` show here), and runs
`dagster dev -w workspace.yaml`. With
`$SOEV_PROJECTS` set, every listed project is a code location of its own: the workspace
file that lists them is written into the instance folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import port_is_free, reference_assistant, viewer

from soev_pipeline.orchestration.instance import ensure_instance
from soev_pipeline.orchestration.location import workspace_for
from soev_pipeline.project import ProjectPaths
from soev_pipeline.project.listing import listed_projects

ROOT = Path(__file__).resolve().parents[1]
DEMO_PORT = 8765
VIEW_PORT = 8766


def main() -> int:
    project = Path(os.environ.get("SOEV_PROJECT") or ROOT / "examples" / "demo" / "project.yaml")
    paths = ProjectPaths.of(project, os.environ.get("SOEV_RUNS_DIR") or None)
    project, home = paths.project_file, ensure_instance(paths.dagster_home)
    dagster = Path(sys.executable).with_name("dagster")
    workspace = ROOT / "workspace.yaml"
    listed = listed_projects()
    if listed:
        workspace = home / "workspace.yaml"
        workspace.write_text(workspace_for(listed), encoding="utf-8")
    # The demo project's default address, so that `soev-evals run` from another shell
    # reaches the same assistant without SOEV_DEMO_URL; a free port when it is taken.
    port = DEMO_PORT if port_is_free(DEMO_PORT) else 0
    with reference_assistant(port=port) as url:
        env = {
            **os.environ,
            "SOEV_DEMO_URL": url,
            "SOEV_PROJECT": str(project),
            "DAGSTER_HOME": str(home),
        }
        # the viewer of the project's runs: each report's metadata links to its run page
        with viewer(project, env, VIEW_PORT if port_is_free(VIEW_PORT) else 0) as view:
            env["SOEV_VIEW_URL"] = view
            print(f"reference assistant at {url}; viewer at {view}", file=sys.stderr)
            print(f"Dagster instance in {home}", file=sys.stderr)
            return _dagster_dev(dagster, workspace, env, url, home, port)


def _dagster_dev(
    dagster: Path, workspace: Path, env: dict[str, str], url: str, home: Path, port: int
) -> int:
    if port != DEMO_PORT:
        print(
            f"port {DEMO_PORT} is taken: for soev-evals in another shell, "
            f"export SOEV_DEMO_URL={url} DAGSTER_HOME={home}",
            file=sys.stderr,
        )
    command = [str(dagster), "dev", "-w", str(workspace), *sys.argv[1:]]
    try:
        return subprocess.call(command, env=env, cwd=ROOT)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
