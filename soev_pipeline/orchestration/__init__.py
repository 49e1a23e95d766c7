"""The Dagster layer: thin assets, jobs, a check and a schedule over `soev_pipeline.run`."""

from .definitions import build_definitions

__all__ = ["build_definitions"]
