"""Power before trust: how many cases a suite needs to detect a drop (`soev-evals plan`).

From the case rates of a run, `core.stats.case_variance` estimates how much a case's pass
rate varies, split into what differs between cases and attempt noise, so that the plan can
answer for another number of attempts k. docs/statistics.md works an example.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from soev_pipeline.core.stats import case_variance, cases_needed, detectable_drop

from .compare import RunRates

DEFAULT_DROP = 0.10


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """The power of one group (a suite, or `overall`) at k attempts per case.

    Attributes:
        name: the suite, or `overall`.
        cases: how many cases the run graded in it.
        pass_rate: their mean pass rate; None without cases.
        case_sd: the standard deviation of one case's pass rate at k attempts.
        detectable_drop: the drop its current cases detect with 80 % power at α = 0.05.
        cases_needed: how many cases detect `drop` that way; None without data.
        variance_floor: the variance was below the floor and the floor was used.
    """

    name: str
    cases: int
    pass_rate: float | None
    case_sd: float | None
    detectable_drop: float | None
    cases_needed: int | None
    variance_floor: bool


def _plan(name: str, rates: Sequence[float], run_k: int, k: int, drop: float) -> GroupPlan:
    if len(rates) < 2:
        pass_rate = math.fsum(rates) / len(rates) if rates else None
        return GroupPlan(name, len(rates), pass_rate, None, None, None, False)
    variance = case_variance(rates, run_k).at(k)
    floor = drop * (1 - drop) / 2
    return GroupPlan(
        name=name,
        cases=len(rates),
        pass_rate=math.fsum(rates) / len(rates),
        case_sd=math.sqrt(variance),
        detectable_drop=detectable_drop(variance, len(rates)),
        cases_needed=cases_needed(max(variance, floor), drop),
        variance_floor=variance < floor,
    )


def plan(
    rates: RunRates, suites: Sequence[str], *, run_k: int, k: int, drop: float = DEFAULT_DROP
) -> list[GroupPlan]:
    """The plan of each of `suites`, then `overall`, from the case rates of a run with `run_k`.

    The variance of a case's pass rate at `k` attempts comes from the run (see
    `core.stats.CaseVariance`). A group whose cases barely vary (every case passed, say)
    would need almost no cases by the formula alone; the plan uses at least the variance of
    case rates of which a share `drop` flips, drop (1 − drop) / 2, and says so.

    Raises:
        ValueError: `drop` is not between 0 and 1, or `k` is below 1.
    """
    if not 0 < drop < 1:
        raise ValueError(f"the drop must lie between 0 and 1, not {drop}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    groups = [
        _plan(name, [c.rate for c in rates.cases.values() if c.suite == name], run_k, k, drop)
        for name in suites
    ]
    groups.append(_plan("overall", [c.rate for c in rates.cases.values()], run_k, k, drop))
    return groups
