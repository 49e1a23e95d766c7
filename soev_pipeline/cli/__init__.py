"""Load an evaluation project for the soev-evals command, and give the command its services."""

from soev_pipeline.core.errors import (
    CriterionParamsError,
    DuplicateCriterionError,
    ProjectError,
    SealChangedError,
    SuiteError,
    UnknownCriterionError,
)
from soev_pipeline.core.project import Project

from .loading import LoadedProject, Suite, load
from .main import main
from .runtimes import BuiltinRuntime, RuntimeBindings, RuntimeProvider

__all__ = [
    "BuiltinRuntime",
    "CriterionParamsError",
    "DuplicateCriterionError",
    "LoadedProject",
    "Project",
    "ProjectError",
    "RuntimeBindings",
    "RuntimeProvider",
    "SealChangedError",
    "Suite",
    "SuiteError",
    "UnknownCriterionError",
    "load",
    "main",
]
