"""Scoring (docs/runs.md#scoring): an attempt's score and pass, and the figures over attempts.

For one attempt:
- score = Σ weight·[pass] / Σ weight over the verdicts with status pass or fail; None when
  there are none (or their weights sum to 0); 0 when a gate verdict fails or errors.
- passed = no verdict is error, no gate verdict fails, and the score reaches the threshold.
  An attempt whose verdicts are all not_applicable has no score and passes: nothing failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb
from statistics import fmean

from soev_pipeline.core.models import Verdict
from soev_pipeline.core.stats import rate_figures

from .results import GroupFigures


@dataclass(frozen=True, slots=True)
class AttemptScore:
    """The score and pass of one attempt, and whether it ran
    (docs/statistics.md#attempts-that-did-not-run): an attempt that did not run counts as
    failed."""

    score: float | None
    passed: bool
    ran: bool = True


def score_attempt(verdicts: Iterable[Verdict], pass_threshold: float = 1.0) -> AttemptScore:
    """Score one attempt's verdicts."""
    graded_weight = 0.0
    passed_weight = 0.0
    any_error = False
    gate_down = False
    graded = False
    for verdict in verdicts:
        if verdict.status == "error":
            any_error = True
            gate_down = gate_down or verdict.gate
        elif verdict.status in ("pass", "fail"):
            graded = True
            graded_weight += verdict.weight
            if verdict.status == "pass":
                passed_weight += verdict.weight
            elif verdict.gate:
                gate_down = True
    score: float | None
    if gate_down:
        score = 0.0
    elif not graded or graded_weight <= 0:
        score = None
    else:
        score = passed_weight / graded_weight
    passed = not any_error and not gate_down and (score is None or score >= pass_threshold - 1e-12)
    return AttemptScore(score, passed)


def can_fail(status: str, *, weight: float, gate: bool) -> bool:
    """Whether a verdict of `status` can fail its attempt, by the rule of `score_attempt`:
    an error always does, a fail does when it is a gate or has weight; a fail of a
    criterion of weight 0 that is no gate is reported but never counts."""
    if status == "error":
        return True
    return status == "fail" and (gate or weight > 0)


@dataclass(frozen=True, slots=True)
class CaseFigures:
    """The figures of one case over its attempts; `unrun` of them did not run."""

    attempts: int
    passed: int
    unrun: int
    pass_rate: float
    mean_score: float | None
    pass_at_k: bool
    pass_all_k: bool


def case_figures(scores: Sequence[AttemptScore]) -> CaseFigures:
    """Pass rate, mean score (None when no attempt has a score), pass@k and pass-all-k.

    An attempt that did not run never counts as passed.
    """
    attempts = len(scores)
    passed = sum(1 for score in scores if score.passed and score.ran)
    values = [score.score for score in scores if score.score is not None]
    return CaseFigures(
        attempts=attempts,
        passed=passed,
        unrun=sum(1 for score in scores if not score.ran),
        pass_rate=passed / attempts if attempts else 0.0,
        mean_score=fmean(values) if values else None,
        pass_at_k=passed > 0,
        pass_all_k=attempts > 0 and passed == attempts,
    )


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n attempts of which c passed: 1 - C(n-c,k)/C(n,k)."""
    if not 0 < k <= n:
        raise ValueError(f"k must be between 1 and n={n}, not {k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return fmean(present) if present else None


def aggregate(
    cases: Sequence[CaseFigures], k: int, *, detectable_drop: float | None = None
) -> GroupFigures:
    """The figures of a group of cases (a suite, a split, the run): means of the case figures.

    The error bars (`soev_pipeline.core.stats.rate_figures`) take the case as the unit;
    `detectable_drop` needs more than the group's rates (`run.plan.group_drop`).

    `pass_at` holds the unbiased pass@j estimate for every j up to the smallest number of
    attempts of a case, so a report can answer for a smaller k than was run.
    """
    smallest = min((case.attempts for case in cases), default=0)
    bars = rate_figures([case.pass_rate for case in cases])
    return GroupFigures(
        cases=len(cases),
        attempts=sum(case.attempts for case in cases),
        passed_attempts=sum(case.passed for case in cases),
        pass_rate=_mean(case.pass_rate for case in cases),
        mean_score=_mean(case.mean_score for case in cases),
        pass_at_k=_mean(float(case.pass_at_k) for case in cases),
        pass_all_k=_mean(float(case.pass_all_k) for case in cases),
        pass_at={
            str(j): _mean(pass_at_k_estimate(case.attempts, case.passed, j) for case in cases)
            for j in range(1, min(k, smallest) + 1)
        },
        stderr=bars.stderr,
        ci95=bars.ci95,
        detectable_drop=detectable_drop,
        unrun_attempts=sum(case.unrun for case in cases),
    )
