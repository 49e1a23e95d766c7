"""The Dagster definitions of the project named by `$SOEV_PROJECT` (default: the demo).

`dagster dev -w workspace.yaml` loads this file; `make ui` sets everything up first.
"""

import os
from pathlib import Path

from soev_pipeline.orchestration import definitions_for

_HERE = Path(__file__).resolve().parent
_PROJECT = os.environ.get("SOEV_PROJECT") or str(_HERE / "examples" / "demo" / "project.yaml")

defs = definitions_for(_PROJECT, os.environ.get("SOEV_RUNS_DIR") or None)
