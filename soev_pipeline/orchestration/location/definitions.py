"""The code location: the definitions of the project that `$SOEV_PROJECT` names.

Without `$SOEV_PROJECT` it is the demo project of this repository. `$SOEV_RUNS_DIR` moves
the runs, as `--runs-dir` does for the CLI. `dagster dev -w workspace.yaml`, `dg` (through
`[tool.dg.project]` in pyproject.toml) and the top-level definitions.py all load this module.
"""

import os
from pathlib import Path

from soev_pipeline.orchestration.definitions import definitions_for

DEMO_PROJECT = Path(__file__).resolve().parents[3] / "examples" / "demo" / "project.yaml"

defs = definitions_for(
    os.environ.get("SOEV_PROJECT") or DEMO_PROJECT, os.environ.get("SOEV_RUNS_DIR") or None
)
