"""The Dagster definitions of the project named by `$SOEV_PROJECT` (default: the demo).

`dagster dev -w workspace.yaml` loads this file; `make ui` sets everything up first.
"""

import os
from pathlib import Path

from soev_pipeline.orchestration import build_definitions

_HERE = Path(__file__).resolve().parent
_PROJECT = os.environ.get("SOEV_PROJECT") or str(_HERE / "examples" / "demo" / "project.yaml")

defs = build_definitions(_PROJECT, runs_dir=os.environ.get("SOEV_RUNS_DIR") or None)
