"""The code location: the definitions of the projects `$SOEV_PROJECTS` lists, else of the
project `$SOEV_PROJECT` names.

With neither it is the demo project of this repository. `$SOEV_RUNS_DIR` moves the runs of
a single project, as `--runs-dir` does for the CLI (a listed project takes its `runs_dir`
from the list). `dagster dev -w workspace.yaml`, `dg` (through `[tool.dg.project]` in
pyproject.toml) and the top-level definitions.py all load this module.
"""

import os
from pathlib import Path

from soev_pipeline.orchestration.definitions import definitions_for, location_for
from soev_pipeline.project.listing import listed_projects

DEMO_PROJECT = Path(__file__).resolve().parents[3] / "examples" / "demo" / "project.yaml"

listed = listed_projects()
defs = (
    location_for(listed)
    if listed is not None
    else definitions_for(
        os.environ.get("SOEV_PROJECT") or DEMO_PROJECT, os.environ.get("SOEV_RUNS_DIR") or None
    )
)
