"""The soev-evals command: argument parsing, rendering and exit statuses.

The names that the reference places here (`load`, `LoadedProject`, `RuntimeProvider`,
`RuntimeBindings`, the project errors) live in `soev_pipeline.project` and
`soev_pipeline.runtime`, and are re-exported here.
"""

from soev_pipeline.core.errors import (
    CriterionParamsError,
    DuplicateCriterionError,
    ProjectError,
    SealChangedError,
    SuiteError,
    UnknownCriterionError,
)
from soev_pipeline.core.project import Project
from soev_pipeline.project import LoadedProject, Suite, load
from soev_pipeline.runtime import BuiltinRuntime, RuntimeBindings, RuntimeProvider

from .main import main

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
