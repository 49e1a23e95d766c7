"""The Dagster definitions of the project named by `$SOEV_PROJECT` (default: the demo).

`dg dev` (through `[tool.dg]` in pyproject.toml) and `dagster definitions validate -w
workspace.yaml` load this file; `make ui` sets everything up first. The definitions
themselves live in `soev_pipeline.orchestration.location`.
"""

from soev_pipeline.orchestration.location.definitions import defs

__all__ = ["defs"]
