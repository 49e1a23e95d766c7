"""The launchpad config of the jobs: every field described, closed sets as enums.

These are what a person sees and fills in when launching `evaluate`, `rescore` or
`new_evaluation` from the UI, so each field says what it does and what its default means.
"""

from __future__ import annotations

from enum import Enum

import dagster as dg
from pydantic import Field

from soev_pipeline.core.models import Split


class SplitChoice(Enum):
    """Which split a run evaluates."""

    both = "both"
    dev = "dev"
    test = "test"

    @property
    def split(self) -> Split | None:
        """The split of the run selection: None for both."""
        if self is SplitChoice.dev:
            return "dev"
        if self is SplitChoice.test:
            return "test"
        return None

    @classmethod
    def of(cls, split: str | None) -> SplitChoice:
        return cls(split or "both")


class EvaluateConfig(dg.Config):
    """What a run evaluates."""

    suites: list[str] = Field(
        default=[],
        description="The suites to run, by name; empty runs every suite of the project.",
    )
    split: SplitChoice = Field(
        default=SplitChoice.both,
        description="The split to run: dev, test, or both. Test cases show only in aggregates.",
    )
    k: int = Field(default=1, ge=1, description="How many times each case is attempted.")
    runtime: str | None = Field(
        default=None,
        description="A runtime provider (entry point in soev.evals.runtimes); empty for the "
        "project's `runtime`, else the built-in one.",
    )
    resume: bool | None = Field(
        default=None,
        description="Resume an archived run: true runs its missing attempts only, false refuses "
        "a run that exists; empty resumes when the run partition is already archived.",
    )


class GradeConfig(dg.Config):
    """How the verdicts are graded."""

    offline: bool = Field(
        default=False,
        description="Answer judge criteria from the judge cache only; a question never asked "
        "gets an error verdict. Opens no runtime provider.",
    )
    runtime: str | None = Field(
        default=None, description="A runtime provider for the judge; empty for the project's."
    )


class ReportConfig(dg.Config):
    """Where an evaluation's report is published."""

    runtime: str | None = Field(
        default=None,
        description="The runtime whose tracker gets the report; empty for the project's.",
    )
