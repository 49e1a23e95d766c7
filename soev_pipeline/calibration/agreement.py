"""How well a judge agrees with people, and people with each other
(docs/statistics.md#the-judge-against-people).

Plain formulas over counts, each worked by hand in tests/calibration/test_agreement.py and
explained in docs/statistics.md. A judge's `error` is its *fail*: the judge fails closed,
so an error never passes an attempt, and a judge that errs where a person says pass is
wrong there. Shares are computed from whole numbers with `fractions.Fraction`, so that
"chance agreement is 1" is decided exactly, not by a rounded float.

κ's interval is the mid-P exact interval of the observed agreement p_o, carried to κ with
the chance agreement p_e as observed: Cohen's own large-sample interval has the same
structure, but its normal approximation has no width at p_o = 0 or 1, however few the
items. bench/calibration.py measures its coverage (docs/statistics.md#kappas-interval).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from soev_pipeline.core.stats import binomial_cdf, log_binomial_pmf, wilson

WIDE_RECALL = 0.4
"""A recall whose interval is wider than this says little: `calibrate` says so."""
NARROW_RECALL = 0.1
"""The half-width of a recall's interval that `calibrate` suggests labelling enough items for."""

JudgeStatus = Literal["pass", "fail", "error"]
Interval = tuple[float, float]
_TAIL = 0.025
"""κ's interval is a 95 % one: 2.5 % of the mid-P tail on either side of it."""
_STEPS = 60
"""Bisection steps of a bound: 2⁻⁶⁰ of the unit interval, far below a float's rounding."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One labelled item after the judge graded it: the people's verdict and the judge's.

    `human_label` is the people's majority label (for kinds with one label per attempt),
    `judge_label` the label the judge gave (None when it gave none, or several).
    """

    human_passed: bool
    judge: JudgeStatus
    human_label: str | None = None
    judge_label: str | None = None


@dataclass(frozen=True, slots=True)
class Confusion:
    """The items by the people's verdict and the judge's, errors apart from fails."""

    pass_pass: int = 0
    pass_fail: int = 0
    pass_error: int = 0
    fail_pass: int = 0
    fail_fail: int = 0
    fail_error: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Confusion:
        counts = dict.fromkeys(
            ("pass_pass", "pass_fail", "pass_error", "fail_pass", "fail_fail", "fail_error"), 0
        )
        for outcome in outcomes:
            counts[f"{'pass' if outcome.human_passed else 'fail'}_{outcome.judge}"] += 1
        return cls(**counts)

    @property
    def items(self) -> int:
        return self.human_pass + self.human_fail

    @property
    def human_pass(self) -> int:
        return self.pass_pass + self.pass_fail + self.pass_error

    @property
    def human_fail(self) -> int:
        return self.fail_pass + self.fail_fail + self.fail_error

    @property
    def judge_errors(self) -> int:
        return self.pass_error + self.fail_error

    @property
    def agreeing(self) -> int:
        """Items where the judge's pass/fail (an error being a fail) is the people's."""
        return self.pass_pass + self.fail_fail + self.fail_error


@dataclass(frozen=True, slots=True)
class Agreement:
    """The judge against the people on pass/fail; see `agreement_of`."""

    items: int
    agreement: float | None
    judge_errors: int
    pass_recall: float | None
    pass_recall_ci95: Interval | None
    fail_recall: float | None
    fail_recall_ci95: Interval | None
    kappa: float | None
    kappa_ci95: Interval | None


def recall(hits: int, total: int) -> tuple[float | None, Interval | None]:
    """`hits / total` with its Wilson 95 % interval; both None when `total` is 0."""
    if total == 0:
        return None, None
    share = hits / total
    return share, wilson(share, total)


def items_for(share: float, half_width: float) -> int:
    """The fewest items whose Wilson interval around `share` is at most ±`half_width`."""

    def half(n: int) -> float:
        low, high = wilson(share, n)
        return (high - low) / 2

    high = 1
    while half(high) > half_width:
        high *= 2
    low = high // 2
    while low + 1 < high:
        middle = (low + high) // 2
        low, high = (low, middle) if half(middle) <= half_width else (middle, high)
    return high


def kappa(
    both_pass: int, first_only: int, second_only: int, both_fail: int
) -> tuple[float | None, Interval | None]:
    """Cohen's κ of two raters on pass/fail, from their 2×2 table, with its 95 % interval.

    p_o is the share of agreeing items, p_e = p₁ p₂ + (1 − p₁)(1 − p₂) the agreement
    their pass shares p₁ and p₂ give by chance, and κ = (p_o − p_e) / (1 − p_e). The
    interval is `agreement_interval` of p_o carried through the same formula,
    ((low − p_e) / (1 − p_e), (high − p_e) / (1 − p_e)), clipped to [−1, 1]: it has width
    whenever the items are few, also when every item agrees (p_o = 1) or none does. Both
    are None without items and when p_e = 1 (both raters said the same thing of every
    item: agreement beyond chance cannot be measured).
    """
    n = both_pass + first_only + second_only + both_fail
    if n == 0:
        return None, None
    agreeing = both_pass + both_fail
    observed = Fraction(agreeing, n)
    first, second = Fraction(both_pass + first_only, n), Fraction(both_pass + second_only, n)
    chance = first * second + (1 - first) * (1 - second)
    if chance == 1:
        return None, None
    value = float((observed - chance) / (1 - chance))
    low, high = agreement_interval(agreeing, n)
    rest = float(1 - chance)
    return value, (
        max(-1.0, (low - float(chance)) / rest),
        min(1.0, (high - float(chance)) / rest),
    )


@functools.lru_cache(maxsize=4096)
def agreement_interval(hits: int, n: int) -> Interval:
    """The mid-P exact 95 % interval of a share `hits / n` (Lancaster, 1961).

    The lower bound is the p at which P(X > hits) + ½ P(X = hits) = 2.5 % for X ~ Bin(n,
    p), the upper bound the p at which P(X < hits) + ½ P(X = hits) = 2.5 %; 0 and 1 when
    `hits` is 0 or `n`. Counting the observed outcome half (the mid-P) keeps the coverage
    near 95 % where Clopper and Pearson's interval, which counts it whole, is wider than it
    needs; unlike Wilson's it never falls far below 95 % near 0 or 1 on a few items, where
    a judge's agreement usually lies. Each bound is found by bisection.
    """
    if not 0 <= hits <= n or n == 0:
        raise ValueError(f"hits must lie in 0..n with n > 0, not {hits} of {n}")

    def half_at(p: float) -> float:
        return 0.5 * math.exp(log_binomial_pmf(hits, n, p))

    def above(p: float) -> float:  # P(X > hits) + ½ P(X = hits): rises with p
        return 1.0 - binomial_cdf(hits, n, p) + half_at(p)

    def below(p: float) -> float:  # P(X < hits) + ½ P(X = hits): falls with p
        return binomial_cdf(hits - 1, n, p) + half_at(p)

    low = 0.0 if hits == 0 else _solve(above, rising=True)
    high = 1.0 if hits == n else _solve(below, rising=False)
    return (low, high)


def _solve(tail: Callable[[float], float], *, rising: bool) -> float:
    """The p in (0, 1) at which the monotone `tail` crosses 2.5 %."""
    low, high = 0.0, 1.0
    for _ in range(_STEPS):
        middle = (low + high) / 2
        if (tail(middle) < _TAIL) == rising:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def agreement_of(outcomes: Sequence[Outcome]) -> Agreement:
    """The judge's agreement with the people over `outcomes` (one per labelled item).

    `agreement` is the share of items where both say pass or both say fail;
    `pass_recall` = P(judge pass | people pass), `fail_recall` = P(judge fail | people
    fail), each with its Wilson interval; κ is Cohen's over the same 2×2 table.
    """
    table = Confusion.of(outcomes)
    n = table.items
    pass_recall, pass_ci = recall(table.pass_pass, table.human_pass)
    fail_recall, fail_ci = recall(table.fail_fail + table.fail_error, table.human_fail)
    value, interval = kappa(
        table.pass_pass,
        table.pass_fail + table.pass_error,
        table.fail_pass,
        table.fail_fail + table.fail_error,
    )
    return Agreement(
        items=n,
        agreement=table.agreeing / n if n else None,
        judge_errors=table.judge_errors,
        pass_recall=pass_recall,
        pass_recall_ci95=pass_ci,
        fail_recall=fail_recall,
        fail_recall_ci95=fail_ci,
        kappa=value,
        kappa_ci95=interval,
    )


def human_agreement(verdicts: Iterable[Sequence[bool]]) -> tuple[float | None, float | None]:
    """How often people agree on an item, and Cohen's κ over their pairs of verdicts.

    `verdicts` holds each item's verdicts, one per person. Every unordered pair of
    verdicts on one item is one observation. Such a pair has no first and second rater,
    so it enters the 2×2 table in both orders: the two raters then have the same pass
    share, and κ does not depend on the order in which the labels were written. Both
    figures are None without an item of two verdicts or more; κ is None when p_e = 1.
    """
    agree_pass = agree_fail = mixed = 0
    for item in verdicts:
        for first, second in itertools.combinations(item, 2):
            if first and second:
                agree_pass += 1
            elif not first and not second:
                agree_fail += 1
            else:
                mixed += 1
    pairs = agree_pass + agree_fail + mixed
    if pairs == 0:
        return None, None
    value, _ = kappa(2 * agree_pass, mixed, mixed, 2 * agree_fail)
    return (agree_pass + agree_fail) / pairs, value


def label_confusion(outcomes: Iterable[Outcome]) -> dict[str, dict[str, int]]:
    """`{people's label: {judge's label: count}}` over the items whose people gave a label.

    A judge that failed on the item counts under `judge_error`; one whose label is not
    known (a kind that asks several questions) is not counted.
    """
    table: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        if outcome.human_label is None:
            continue
        judged = "judge_error" if outcome.judge == "error" else outcome.judge_label
        if judged is None:
            continue
        row = table.setdefault(outcome.human_label, {})
        row[judged] = row.get(judged, 0) + 1
    return {label: dict(sorted(row.items())) for label, row in sorted(table.items())}
