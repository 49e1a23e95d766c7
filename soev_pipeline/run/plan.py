"""Power before trust: what a suite detects, and how many cases it needs (`soev-evals plan`).

A paired comparison's power depends on how much a case's result varies between attempts
(`core.power`). That is measured from the attempts themselves when the run made two or
more per case, and at one attempt per case from the run's comparison with the run before
it: how many cases changed between two runs of one assistant. Without either, the plan
says what it needs instead of guessing. docs/statistics.md works an example.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from soev_pipeline.core.power import (
    MAX_CASES,
    CasePopulation,
    cases_needed,
    detectable_drop,
    population_from_attempts,
    population_from_pairs,
)

from .compare import CaseAttempts, RunAttempts
from .results import Comparison, PairedGroup

DEFAULT_DROP = 0.10


def group_population(
    cases: Sequence[CaseAttempts], k: int, paired: PairedGroup | None
) -> CasePopulation | None:
    """The population of a group's cases: from their attempts when the run made k ≥ 2,
    else from the group in the run's comparison with the run before it (`paired`)."""
    if k >= 2:
        return population_from_attempts((sum(case.passes), len(case.passes)) for case in cases)
    if paired is None or paired.pass_rate is None or paired.baseline_pass_rate is None:
        return None
    mean = (paired.pass_rate + paired.baseline_pass_rate) / 2
    return population_from_pairs(paired.pairs, paired.improved + paired.regressed, mean)


def group_drop(cases: Sequence[CaseAttempts], k: int, paired: PairedGroup | None) -> float | None:
    """A group's `detectable_drop`: the scale drop that `compare` of the same cases run
    again with the same k detects with 80 % power at α = 0.05 (no Holm); None below two
    cases, without a population (see `group_population`), or when no drop is detected so."""
    if len(cases) < 2:
        return None
    population = group_population(cases, k, paired)
    return None if population is None else detectable_drop(population, len(cases), k)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The power of one group (a suite, or `overall`).

    Attributes:
        name: the suite, or `overall`.
        cases: how many cases the run graded in it.
        pass_rate: their mean pass rate; None without cases.
        detectable_drop: the drop its cases detect today (the report's `detectable_drop`).
        cases_needed: how many cases detect the plan's drop at its k; None when unknown.
        variance_from: what measured the variance between attempts: `attempts`, or
            `comparison with run ID`; None when nothing could.
        needs: what the plan needs to answer, when it cannot.
        note: why `cases_needed` is None although the variance is known.
    """

    name: str
    cases: int
    pass_rate: float | None
    detectable_drop: float | None
    cases_needed: int | None
    variance_from: str | None
    needs: str | None
    note: str | None


def _plan(
    name: str,
    cases: Sequence[CaseAttempts],
    paired: PairedGroup | None,
    *,
    run_k: int,
    k: int,
    drop: float,
    comparison: Comparison | None,
) -> GroupPlan:
    pass_rate = math.fsum(case.rate for case in cases) / len(cases) if cases else None
    population = group_population(cases, run_k, paired)
    if population is None:
        if len(cases) < 2:
            needs = "at least 2 cases"
        elif run_k == 1:
            needs = "an earlier run of the project to compare with, or a run with --k 2 or more"
        else:
            needs = "cases with at least 2 attempts that ran"
        return GroupPlan(name, len(cases), pass_rate, None, None, None, needs, None)
    source = "attempts"
    if run_k < 2 and comparison is not None:
        source = f"comparison with run {comparison.baseline_id}"
    needed = cases_needed(population, drop, k)
    note = None
    if needed is None:
        note = (
            f"the drop is larger than the pass rate ({100 * population.mean:.1f} %)"
            if drop > population.mean
            else f"more than {MAX_CASES} cases"
        )
    return GroupPlan(
        name=name,
        cases=len(cases),
        pass_rate=pass_rate,
        detectable_drop=detectable_drop(population, len(cases), run_k) if len(cases) >= 2 else None,
        cases_needed=needed,
        variance_from=source,
        needs=None,
        note=note,
    )


def plan(
    attempts: RunAttempts,
    suites: Sequence[str],
    *,
    k: int,
    drop: float = DEFAULT_DROP,
    comparison: Comparison | None = None,
) -> list[GroupPlan]:
    """The plan of each of `suites`, then `overall`, from the attempts of a run.

    `comparison` is the run's comparison with the run before it; a run with one attempt
    per case needs it to know how much a case varies between attempts.

    Raises:
        ValueError: `drop` is not between 0 and 1, or `k` is below 1.
    """
    if not 0 < drop < 1:
        raise ValueError(f"the drop must lie between 0 and 1, not {drop}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    graded = [case for case in attempts.cases.values() if case.suite is not None]
    members = [
        (name, [case for case in graded if case.suite == name], _suite(comparison, name))
        for name in suites
    ]
    members.append(("overall", graded, comparison.overall if comparison else None))
    return [
        _plan(name, cases, paired, run_k=attempts.k, k=k, drop=drop, comparison=comparison)
        for name, cases, paired in members
    ]


def _suite(comparison: Comparison | None, name: str) -> PairedGroup | None:
    return None if comparison is None else comparison.suites.get(name)
