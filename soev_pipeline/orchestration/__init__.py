"""The Dagster layer: assets, jobs, checks, a sensor and a schedule over `soev_pipeline.api`.

Its names load on first use: `soev-evals run` imports `orchestration.record` alone to record
a run, without the definitions (and what the assets import).
"""

from typing import Any

__all__ = ["SoevProject", "definitions_for", "load_project", "project_definitions"]


def __getattr__(name: str) -> Any:
    if name in {"definitions_for", "project_definitions"}:
        from . import definitions

        return getattr(definitions, name)
    if name in {"SoevProject", "load_project"}:
        from . import resources

        return getattr(resources, name)
    raise AttributeError(f"module 'soev_pipeline.orchestration' has no attribute {name!r}")
