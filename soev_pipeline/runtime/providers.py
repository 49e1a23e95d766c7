"""Runtime providers: where the run and rescore commands get their arm, judge and helpers."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from soev_pipeline.core.ports import Arm, CaseSetup, Judge, LanguageDetector, Tracker
from soev_pipeline.project import LoadedProject

ENTRY_POINT_GROUP = "soev.evals.runtimes"
BUILTIN = "builtin"
Operation = Literal["run", "rescore"]


@dataclass(frozen=True)
class RuntimeBindings:
    """The services that a `RuntimeProvider` gives to the run and rescore commands."""

    arm: Arm | None = None
    judge: Judge | None = None
    language_detector: LanguageDetector | None = None
    setup: CaseSetup | None = None
    tracker: Tracker | None = None


@runtime_checkable
class RuntimeProvider(Protocol):
    """A provider of the services that the run and rescore commands use.

    Register a factory in the entry point group `soev.evals.runtimes`; the CLI calls it
    without arguments, and selects it with `--runtime NAME` or the project's `runtime`.
    """

    def open(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AbstractAsyncContextManager[RuntimeBindings]: ...
