"""The Dagster layer: thin assets, jobs, checks, sensors and a schedule over `soev_pipeline.run`.

Its names load on first use: `soev-evals run` imports `orchestration.record` alone to record
a run, without the definitions (and what the assets import).
"""

from typing import Any

__all__ = ["SoevProject", "build_definitions", "definitions_for", "load_project"]


def __getattr__(name: str) -> Any:
    if name in {"build_definitions", "definitions_for"}:
        from . import definitions

        return getattr(definitions, name)
    if name in {"SoevProject", "load_project"}:
        from . import resources

        return getattr(resources, name)
    raise AttributeError(f"module 'soev_pipeline.orchestration' has no attribute {name!r}")
