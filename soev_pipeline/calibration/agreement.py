"""How well a judge agrees with people, and people with each other
(docs/statistics.md#the-judge-against-people).

Plain formulas over counts, each worked by hand in tests/calibration/test_agreement.py and
explained in docs/statistics.md. A judge's `error` is its *fail*: the judge fails closed,
so an error never passes an attempt, and a judge that errs where a person says pass is
wrong there. Shares are computed from whole numbers with `fractions.Fraction`, so that
"chance agreement is 1" is decided exactly, not by a rounded float.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from soev_pipeline.core.stats import Z95, wilson

JudgeStatus = Literal["pass", "fail", "error"]
Interval = tuple[float, float]


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


def kappa(
    both_pass: int, first_only: int, second_only: int, both_fail: int
) -> tuple[float | None, Interval | None]:
    """Cohen's κ of two raters on pass/fail, from their 2×2 table, with its 95 % interval.

    p_o is the share of agreeing items, p_e = p₁ p₂ + (1 − p₁)(1 − p₂) the agreement
    their pass shares p₁ and p₂ give by chance, κ = (p_o − p_e) / (1 − p_e), and the
    interval κ ± 1.96 · sqrt(p_o (1 − p_o) / (n (1 − p_e)²)), clipped to [−1, 1]. Both
    are None without items and when p_e = 1 (both raters said the same thing of every
    item: agreement beyond chance cannot be measured).
    """
    n = both_pass + first_only + second_only + both_fail
    if n == 0:
        return None, None
    observed = Fraction(both_pass + both_fail, n)
    first, second = Fraction(both_pass + first_only, n), Fraction(both_pass + second_only, n)
    chance = first * second + (1 - first) * (1 - second)
    if chance == 1:
        return None, None
    value = float((observed - chance) / (1 - chance))
    half = Z95 * math.sqrt(float(observed * (1 - observed) / (n * (1 - chance) ** 2)))
    return value, (max(-1.0, value - half), min(1.0, value + half))


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
