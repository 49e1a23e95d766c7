"""Power before trust: what a suite detects, and how many cases it needs (`soev-evals plan`).

A paired comparison's power depends on how much a case's result varies between attempts
(`core.power`). That is measured from the attempts themselves when the run made two or
more per case, and at one attempt per case from the run's comparison with the run before
it: how many cases changed between two runs of one assistant. Without either, the plan
says what it needs instead of guessing. Every answer is the power of the gate as it is
applied, overall first: a suite's drop is found when it moves the whole run.
docs/statistics.md works an example.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from soev_pipeline.core.power import (
    MAX_CASES,
    CasePopulation,
    Rest,
    cases_needed,
    detectable_drop,
    population_from_attempts,
    population_from_pairs,
)

from .results import Comparison, PairedGroup
from .run_attempts import CaseAttempts, RunAttempts

DEFAULT_DROP = 0.10
MIN_CASES_NEEDED = 5
"""`plan` states the cases a group needs from this many of its cases on: from fewer, how
much the cases vary is too uncertain (bench/power.py: with 2 or 3 cases at k = 1, the
stated number detects a drop only about two times in three)."""


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


def _rest_population(
    others: Sequence[CaseAttempts],
    k: int,
    paired: PairedGroup | None,
    overall: PairedGroup | None,
) -> CasePopulation | None:
    """The population of the run's cases outside a group: from their attempts (k ≥ 2), or
    from the pairs of the comparison's overall group that are not the group's (k = 1)."""
    if k >= 2:
        return population_from_attempts((sum(case.passes), len(case.passes)) for case in others)
    if overall is None or overall.pass_rate is None or overall.baseline_pass_rate is None:
        return None
    pairs, changed = overall.pairs, overall.improved + overall.regressed
    total = (overall.pass_rate + overall.baseline_pass_rate) / 2 * overall.pairs
    if (
        paired is not None
        and paired.pass_rate is not None
        and paired.baseline_pass_rate is not None
    ):
        pairs -= paired.pairs
        changed -= paired.improved + paired.regressed
        total -= (paired.pass_rate + paired.baseline_pass_rate) / 2 * paired.pairs
    return population_from_pairs(pairs, changed, total / pairs) if pairs > 0 else None


@dataclass(frozen=True, slots=True)
class GroupPower:
    """What decides a group's power in the gate: its cases' population, and the run's
    other cases, which stay unchanged while the group drops (None for the whole run)."""

    population: CasePopulation
    cases: int
    rest: Rest | None


def group_power(
    run: RunAttempts,
    case_ids: Collection[str],
    paired: PairedGroup | None,
    overall: PairedGroup | None,
) -> GroupPower | None:
    """The power model of the group of `case_ids` of `run`: None when the variance between
    attempts is unknown (see `group_population`).

    `paired` is the group, `overall` the whole run, in the run's comparison with the run
    before it. When the rest's population is unknown (no other case has attempts or pairs
    to measure it), the group's own stands in for it.
    """
    members = set(case_ids)
    cases = [run.cases[case_id] for case_id in case_ids]
    population = group_population(cases, run.k, paired)
    if population is None:
        return None
    others = [
        case
        for case_id, case in run.cases.items()
        if case.suite is not None and case_id not in members
    ]
    if not others:
        return GroupPower(population, len(cases), None)
    rest = _rest_population(others, run.k, paired, overall) or population
    return GroupPower(population, len(cases), Rest(rest, len(others)))


def group_drop(
    run: RunAttempts,
    case_ids: Collection[str],
    paired: PairedGroup | None,
    overall: PairedGroup | None,
) -> float | None:
    """A group's `detectable_drop`: the scale drop of its cases alone that the gate
    (`compare --fail-on-regression` of the same cases run again with the same k, overall
    first) detects with 80 % power at α = 0.05; None below two cases, without a population
    (see `group_population`), or when no drop is detected so."""
    if len(case_ids) < 2:
        return None
    model = group_power(run, case_ids, paired, overall)
    if model is None:
        return None
    return detectable_drop(model.population, model.cases, run.k, rest=model.rest)


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
    run: RunAttempts,
    case_ids: Collection[str],
    paired: PairedGroup | None,
    *,
    k: int,
    drop: float,
    comparison: Comparison | None,
) -> GroupPlan:
    cases = [run.cases[case_id] for case_id in case_ids]
    pass_rate = math.fsum(case.rate for case in cases) / len(cases) if cases else None
    model = group_power(run, case_ids, paired, comparison.overall if comparison else None)
    if model is None:
        if len(cases) < 2:
            needs = "at least 2 cases"
        elif run.k == 1:
            needs = "an earlier run of the project to compare with, or a run with --k 2 or more"
        else:
            needs = "cases with at least 2 attempts that ran"
        return GroupPlan(name, len(cases), pass_rate, None, None, None, needs, None)
    source = "attempts"
    if run.k < 2 and comparison is not None:
        source = f"comparison with run {comparison.baseline_id}"
    population = model.population
    needed: int | None = None
    note = None
    if len(cases) < MIN_CASES_NEEDED:
        note = f"fewer than {MIN_CASES_NEEDED} cases say too little about how much cases vary"
    elif (needed := cases_needed(population, drop, k, rest=model.rest)) is None:
        note = (
            f"the drop is larger than the pass rate ({100 * population.mean:.1f} %)"
            if drop > population.mean
            else f"more than {MAX_CASES} cases"
        )
    detects = None
    if len(cases) >= 2:
        detects = detectable_drop(population, len(cases), run.k, rest=model.rest)
    return GroupPlan(
        name=name,
        cases=len(cases),
        pass_rate=pass_rate,
        detectable_drop=detects,
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

    Each answer is the power of the gate as applied (overall first): a suite's is for a
    drop of its cases alone, the run's other cases unchanged. `comparison` is the run's
    comparison with the run before it; a run with one attempt per case needs it to know
    how much a case varies between attempts.

    Raises:
        ValueError: `drop` is not between 0 and 1, or `k` is below 1.
    """
    if not 0 < drop < 1:
        raise ValueError(f"the drop must lie between 0 and 1, not {drop}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    graded = {case_id for case_id, case in attempts.cases.items() if case.suite is not None}
    members = [
        (
            name,
            {case_id for case_id in graded if attempts.cases[case_id].suite == name},
            _suite(comparison, name),
        )
        for name in suites
    ]
    members.append(("overall", graded, comparison.overall if comparison else None))
    return [
        _plan(name, attempts, case_ids, paired, k=k, drop=drop, comparison=comparison)
        for name, case_ids, paired in members
    ]


def _suite(comparison: Comparison | None, name: str) -> PairedGroup | None:
    return None if comparison is None else comparison.suites.get(name)
