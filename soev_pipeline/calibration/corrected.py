"""A judged pass rate corrected for the judge's measured errors
(docs/statistics.md#the-corrected-rate).

A judge that passes a fail now and then, or fails a pass, biases every rate it grades. With
its pass recall r = P(judge pass | human pass) and fail recall s = P(judge fail | human
fail), measured on human labels, the rate q it gives a run's attempts says that the rate a
person would give is (Rogan and Gladen, 1978)

    θ = (q + s − 1) / (r + s − 1),

clipped to [0, 1] (and then said to be clipped), and unknown unless the judge is shown to
be better than a coin: Youden's J = r + s − 1 must be above 0, and so must the lower bound of
its 95 % interval (`youden_interval`). A judge near chance divides by a J near 0, and its
corrected rate lands on 0 or 1 as often as not; without this rule a coin-like judge on 40
labels got a corrected rate clipped to 0 or 1 in a quarter to a third of label sets.

The interval carries the uncertainty of all three estimates, by a parametric bootstrap. q
comes from the run's attempts, clustered by case as every rate of docs/statistics.md: its
effective size m is the one that makes a binomial as wide as the clustered standard error.
r and s come from the labelled items. Each is drawn from its Jeffreys distribution,
Beta(hits + ½, misses + ½), θ is computed for each draw, and the interval is the 2.5th and
97.5th percentiles of those θ. A draw in which r + s ≤ 1 has no θ: it counts as 0 for the
lower bound and as 1 for the upper one, so a judge the labels cannot tell from a coin gets
a wide interval rather than a wrong one. The interval is then never narrower than the
Wilson interval of q alone, which knows nothing of the judge's errors (widened to that
width, about its middle, in the rare case it is not).

Why this method: the delta method's interval (Rogan and Gladen's) and its adjusted form
(Lang and Reiczigel, 2014) cover too seldom for a lenient judge, the case that matters
most (pass recall near 1, fail recall near 0.3, 40 labels: 84-91 % for a 95 % interval),
because θ is far from linear in s there. The bootstrap covers 93-98 % over the settings of
bench/calibration.py. The draws are seeded from the counts, so the same figures give the
same interval every time. docs/statistics.md works an example through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from soev_pipeline.core.stats import wilson

Interval = tuple[float, float]
DRAWS = 20_000
"""Bootstrap draws per interval: a bound then moves by about 0.004 between seeds."""
PRIOR = 0.5
"""The pseudo-count of each outcome in a Jeffreys distribution, Beta(hits + ½, misses + ½)."""


@dataclass(frozen=True, slots=True)
class JudgedRate:
    """The judge's pass rate over a run's attempts, with its clustered effective size.

    Attributes:
        passed: the verdicts that passed.
        verdicts: the verdicts counted (pass, fail or error; an error is a fail).
        cases: the cases they belong to.
        effective: the size of a simple random sample as informative as the clustered
            verdicts: q (1 − q) / stderr², at most `verdicts`; `verdicts` when that is
            undefined (q is 0 or 1, the stderr 0, or a single case).
    """

    passed: int
    verdicts: int
    cases: int
    effective: float

    @property
    def rate(self) -> float | None:
        return self.passed / self.verdicts if self.verdicts else None


def judged_rate(per_case: Sequence[tuple[int, int]]) -> JudgedRate:
    """The judge's pass rate over `per_case` (passed, counted) verdict counts of each case.

    q = Σ passed / Σ counted, a ratio of case totals; its standard error treats the case as
    the unit: sqrt(Σ (a_i − q m_i)² / (n (n − 1))) / m̄, with a_i and m_i the passed and
    counted verdicts of case i and m̄ their mean count.
    """
    cases = [(passed, counted) for passed, counted in per_case if counted > 0]
    passed = sum(a for a, _ in cases)
    total = sum(m for _, m in cases)
    n = len(cases)
    if total == 0:
        return JudgedRate(0, 0, 0, 0.0)
    q = passed / total
    effective = float(total)
    if n >= 2 and 0 < q < 1:
        mean = total / n
        spread = math.fsum((a - q * m) ** 2 for a, m in cases) / (n * (n - 1))
        stderr = math.sqrt(spread) / mean
        if stderr > 0:
            effective = min(float(total), q * (1 - q) / stderr**2)
    return JudgedRate(passed, total, n, effective)


def rogan_gladen(q: float, pass_recall: float, fail_recall: float) -> float | None:
    """(q + s − 1) / (r + s − 1), clipped to [0, 1]; None when r + s − 1 ≤ 0."""
    youden = pass_recall + fail_recall - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (q + fail_recall - 1) / youden))


def youden_interval(pass_hits: int, human_pass: int, fail_hits: int, human_fail: int) -> Interval:
    """The 95 % interval of Youden's J = r + s − 1, r and s measured on separate items.

    The sum of two independent shares, by Newcombe's method (MOVER, 1998) over their Wilson
    intervals [r_L, r_U] and [s_L, s_U]: J − sqrt((r − r_L)² + (s − s_L)²) to J +
    sqrt((r_U − r)² + (s_U − s)²). Both counts of items must be above 0.
    """
    r, s = pass_hits / human_pass, fail_hits / human_fail
    (r_low, r_high), (s_low, s_high) = wilson(r, human_pass), wilson(s, human_fail)
    youden = r + s - 1
    return (
        youden - math.hypot(r - r_low, s - s_low),
        youden + math.hypot(r_high - r, s_high - s),
    )


@dataclass(frozen=True, slots=True)
class Correction:
    """A judged rate corrected for the judge's errors, or why it is not.

    Attributes:
        value: the corrected rate (Rogan–Gladen, clipped to [0, 1]); None when it is not
            given, and then `why` says why in words.
        interval: its 95 % interval (`corrected_interval`); None with `value`.
        clipped: whether the formula gave a value below 0 or above 1, shown as 0 or 1.
        why: why there is no value; None when there is one.
    """

    value: float | None
    interval: Interval | None = None
    clipped: bool = False
    why: str | None = None


NO_RATE = "the run has no judged verdict of it to correct"
NO_RECALLS = "it needs labelled items that people passed and failed"


def correct(
    rate: JudgedRate, pass_hits: int, human_pass: int, fail_hits: int, human_fail: int
) -> Correction:
    """The judged `rate` corrected for a judge that passed `pass_hits` of the `human_pass`
    labelled items people passed and failed `fail_hits` of the `human_fail` they failed.

    No value without a rate, without items on both sides, or when the judge is not shown
    to be better than chance: J ≤ 0, or the lower bound of J's 95 % interval ≤ 0.
    """
    q = rate.rate
    if q is None:
        return Correction(None, why=NO_RATE)
    if human_pass == 0 or human_fail == 0:
        return Correction(None, why=NO_RECALLS)
    r, s = pass_hits / human_pass, fail_hits / human_fail
    youden = r + s - 1
    if youden <= 0:
        return Correction(
            None,
            why=f"on the labels the judge does no better than chance (pass recall + fail "
            f"recall − 1 = {youden:.2f})",
        )
    low, high = youden_interval(pass_hits, human_pass, fail_hits, human_fail)
    if low <= 0:
        return Correction(
            None,
            why=f"the judge is not shown to be better than chance: Youden's J (pass recall + "
            f"fail recall − 1) = {youden:.2f}, and its 95 % interval [{low:.2f}, {high:.2f}] "
            "includes 0",
        )
    raw = (q + s - 1) / youden
    interval = corrected_interval(rate, pass_hits, human_pass, fail_hits, human_fail)
    return Correction(min(1.0, max(0.0, raw)), interval, clipped=not 0.0 <= raw <= 1.0)


def corrected_interval(
    rate: JudgedRate,
    pass_hits: int,
    human_pass: int,
    fail_hits: int,
    human_fail: int,
    draws: int = DRAWS,
) -> Interval | None:
    """The 95 % interval of the corrected rate, by the parametric bootstrap of the module.

    `pass_hits` of `human_pass` items that people passed did the judge pass; `fail_hits`
    of `human_fail` items that people failed did it fail. None without a rate, or without
    labelled items of both kinds.
    """
    if rate.verdicts == 0 or human_pass == 0 or human_fail == 0:
        return None
    import numpy as np  # imported here: a calibration without a run needs none of it

    q, m = rate.passed / rate.verdicts, rate.effective
    seed = [rate.passed, rate.verdicts, round(m * 1000), pass_hits, human_pass]
    generator = np.random.default_rng([*seed, fail_hits, human_fail, draws])
    q_draws = generator.beta(q * m + PRIOR, (1 - q) * m + PRIOR, draws)
    r_draws = generator.beta(pass_hits + PRIOR, human_pass - pass_hits + PRIOR, draws)
    s_draws = generator.beta(fail_hits + PRIOR, human_fail - fail_hits + PRIOR, draws)
    youden = r_draws + s_draws - 1
    known = youden > 0
    theta = np.clip((q_draws + s_draws - 1) / np.where(known, youden, 1.0), 0.0, 1.0)
    low = float(np.quantile(np.where(known, theta, 0.0), 0.025))
    high = float(np.quantile(np.where(known, theta, 1.0), 0.975))
    return _at_least(low, high, wilson(q, m))


def _at_least(low: float, high: float, floor: Interval) -> Interval:
    """[low, high] widened about its middle to the width of `floor`, kept inside [0, 1]."""
    width = floor[1] - floor[0]
    if high - low >= width:
        return (low, high)
    middle = (low + high) / 2
    low, high = middle - width / 2, middle + width / 2
    if low < 0:
        low, high = 0.0, width
    elif high > 1:
        low, high = 1.0 - width, 1.0
    return (low, high)
