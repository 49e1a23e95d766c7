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


class RunConfig(dg.Config):
    """What a run evaluates, and how it is graded."""

    suites: list[str] = Field(
        default=[],
        description="The suites to run, by name; empty runs every suite of the project "
        "(a new run only).",
    )
    split: SplitChoice = Field(
        default=SplitChoice.both,
        description="The split to run: dev, test, or both; test cases show only in "
        "aggregates (a new run only).",
    )
    k: int = Field(
        default=1, ge=1, description="How many times each case is attempted (a new run only)."
    )
    resume: bool | None = Field(
        default=None,
        description="Resume an archived run: true runs its missing attempts only, false refuses "
        "a run that exists; empty resumes when the run partition is already archived.",
    )
    offline: bool = Field(
        default=False,
        description="Grade without opening the runtime: the judge answers from its cache "
        "only, and a question never asked gets an error verdict (a rescore only).",
    )
    runtime: str | None = Field(
        default=None,
        description="A runtime provider (entry point in soev.evals.runtimes); empty for the "
        "project's `runtime`, else the built-in one.",
    )


class NewEvaluationConfig(dg.Config):
    """A new evaluation: what it runs, and optionally its run id."""

    run_id: str = Field(
        default="",
        description="The id of the new run ([a-z0-9][a-z0-9._-]*); empty for a UTC timestamp.",
    )
    suites: list[str] = Field(
        default=[], description="The suites to run, by name; empty runs every suite."
    )
    split: SplitChoice = Field(
        default=SplitChoice.both, description="The split to run: dev, test, or both."
    )
    k: int = Field(default=1, ge=1, description="How many times each case is attempted.")
    runtime: str | None = Field(
        default=None, description="A runtime provider; empty for the project's, else built-in."
    )
