"""The Dagster layer: thin assets, jobs, a check and a schedule over `soev_pipeline.run`."""

from .definitions import build_definitions, definitions_for
from .resources import SoevProject, load_project

__all__ = ["SoevProject", "build_definitions", "definitions_for", "load_project"]
