"""The Dagster definitions of the project named by `$SOEV_PROJECT` (default: the demo).

`dagster dev -w workspace.yaml` loads this file; `make ui` sets everything up first. The
definitions themselves live in `soev_pipeline.orchestration.location`.
"""

from soev_pipeline.orchestration.location.definitions import defs

__all__ = ["defs"]
