"""The power of the exact sign test that `compare` runs over a group's pairs: alone
(`sign_test_power`) and beside pairs that change both ways alike (`beside`), the other
cases of the run when the gate tests `overall` first.

The critical values (the most improved pairs out of N changed pairs at which the test still
rejects) are kept per α and grown step by step; the tail probabilities are summed over the
numbers of changed pairs that carry their mass. `core.power` puts a population of cases
under these (docs/statistics.md#power-what-a-suite-detects-and-how-many-cases-it-needs);
`tests/core/test_power.py` checks them against enumerations of every outcome.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from .stats import ALPHA, EXACT_UP_TO, binomial_cdf, log_binomial_pmf

_LOG_WINDOW = math.log(1e-13)
"""Numbers of changed pairs less likely than this (relative to the likeliest) are left out."""
_REFRESH = 256
"""Every so many steps the stepwise tail probability is computed afresh."""


class _CriticalValues:
    """c[N]: the most improved pairs out of N changed pairs at which the sign test still
    rejects at α (−1 when it cannot), for N = 0, 1, ... as far as asked.

    c[N + 1] is c[N] or c[N] + 1, so each step tries one candidate, carrying the tail
    S = Σ_{i ≤ c} C(N, i) from N to N + 1 (S' = 2S − C(N, c)): up to `EXACT_UP_TO` in whole
    numbers, deciding as `sign_test` does (the same correctly rounded 2S / 2^N), beyond in
    floating point.
    """

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha
        self.values = [-1]
        self.tail = 0  # Σ_{i ≤ c} C(N, i) for the last N, whole up to EXACT_UP_TO
        self.term = 0  # C(N, c)
        self.share = 0.0  # the tail over 2^N, beyond EXACT_UP_TO

    def __getitem__(self, changed: int) -> int:
        while len(self.values) <= changed:
            if len(self.values) <= EXACT_UP_TO:
                self._exact_step()
            else:
                self._float_step()
        return self.values[changed]

    def _exact_step(self) -> None:
        total = len(self.values)  # the N to decide, from N − 1
        last = self.values[-1]
        tail, term = self.tail, self.term
        if last >= 0:
            tail = 2 * tail - term  # Σ_{i ≤ c} C(N, i)
            term = term * total // (total - last)  # C(N, c)
            wider = term * (total - last) // (last + 1)  # C(N, c + 1)
        else:
            wider = 1  # C(N, 0)
        step = last + 1
        if step < total - step and 2 * (tail + wider) / (1 << total) < self.alpha:
            self.values.append(step)
            self.tail, self.term = tail + wider, wider
        else:
            self.values.append(last)
            self.tail, self.term = tail, term
        if total == EXACT_UP_TO:
            self.share = self.tail / (1 << total)

    def _float_step(self) -> None:
        total = len(self.values)
        last = self.values[-1]
        share = self.share
        if last >= 0:
            share -= 0.5 * math.exp(log_binomial_pmf(last, total - 1, 0.5))
        step = last + 1
        wider = share + math.exp(log_binomial_pmf(step, total, 0.5))
        if 2 * wider < self.alpha:
            self.values.append(step)
            self.share = wider
        else:
            self.values.append(last)
            self.share = share


@lru_cache(maxsize=8)
def _critical_values(alpha: float) -> _CriticalValues:
    return _CriticalValues(alpha)


def _critical(changed: int, alpha: float) -> int:
    return _critical_values(alpha)[changed]


def sign_test_power(n: int, improve: float, regress: float, alpha: float = ALPHA) -> float:
    """P(the sign test over n pairs finds a regression at `alpha`).

    Each pair improves with probability `improve` and regresses with `regress`; the number
    N of changed pairs is Bin(n, improve + regress), the improved ones among them
    Bin(N, improve / (improve + regress)), and the test rejects when they are at most the
    critical value c(N). The sum runs over the likely N only; P(Bin(N, s) ≤ c) follows from
    the one for N − 1 in a step (it is that less s · P(Bin(N − 1, s) = c)).
    """
    change = improve + regress
    if n <= 0 or regress <= 0:
        return 0.0
    share = improve / change
    if change >= 1.0:
        return _rejected(n, share, alpha, None, None)
    mode = min(n, int((n + 1) * change))
    top = log_binomial_pmf(mode, n, change)
    low, high = mode, mode
    while low > 0 and log_binomial_pmf(low - 1, n, change) - top > _LOG_WINDOW:
        low -= 1
    while high < n and log_binomial_pmf(high + 1, n, change) - top > _LOG_WINDOW:
        high += 1
    total = 0.0
    below: float | None = None
    critical: int | None = None
    for changed in range(low, high + 1):
        below = _rejected(changed, share, alpha, below, critical)
        critical = _critical(changed, alpha)
        total += math.exp(log_binomial_pmf(changed, n, change)) * below
    return min(1.0, total)


def _rejected(
    changed: int, share: float, alpha: float, before: float | None, critical: int | None
) -> float:
    """P(Bin(changed, share) ≤ c(changed)); `before` is that for changed − 1, whose
    critical value was `critical`, when known."""
    now = _critical(changed, alpha)
    if now < 0:
        return 0.0
    if share <= 0:
        return 1.0
    if before is None or critical is None or critical < 0 or changed % _REFRESH == 0:
        return binomial_cdf(now, changed, share)
    value = before - share * math.exp(log_binomial_pmf(critical, changed - 1, share))
    if now > critical:
        value += math.exp(log_binomial_pmf(now, changed, share))
    return min(1.0, max(0.0, value))


_SDS = 6.0
"""`beside` sums the counts of changed pairs within this many standard deviations of their
mean (the rest weighs less than 1e-8)."""
_EXACT_BUDGET = 4_000_000
"""Above this many terms `beside` answers from the normal approximation."""
_CHUNK = 200_000
"""`beside` sums this many terms at a time."""


def _window(n: int, p: float) -> range:
    """The counts of Bin(n, p) that carry its mass."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    return range(
        max(0, math.floor(mean - _SDS * sd) - 2), min(n, math.ceil(mean + _SDS * sd) + 2) + 1
    )


def beside(
    n: int, improve: float, regress: float, others: int, either: float, alpha: float = ALPHA
) -> float:
    """P(the sign test over n pairs of a group and `others` pairs beside it finds a
    regression at `alpha`), where each of the group's pairs improves with probability
    `improve` and regresses with `regress`, and each other pair improves, and regresses,
    with probability `either`.

    Exact: the sum over the numbers of changed pairs of the group (N_g) and of the others
    (N_o), each binomial, of the chance that the group's improved ones, Bin(N_g, s), and
    the others', Bin(N_o, ½), are together at most the critical value c(N_g + N_o). (All
    pairs drawn alike from the mixture would overstate how much the group's count varies
    and understate the power: by 1 to 2 points for a suite of 40 beside 80 cases, by 10
    for 10 cases beside 1000 that hardly ever change.) Beyond `_EXACT_BUDGET` terms, from
    the normal approximation of the number of changed pairs and of regressed less improved.
    """
    change = improve + regress
    if n <= 0 or regress <= 0:
        return 0.0
    if others <= 0 or either <= 0:
        return sign_test_power(n, improve, regress, alpha)
    share = improve / change
    group, rest = _window(n, min(1.0, change)), _window(others, min(1.0, 2 * either))
    widest = _window(group.stop - 1, share).stop - _window(group.start, share).start
    if len(group) * len(rest) * widest > _EXACT_BUDGET:
        return _beside_normal(n, improve, regress, others, either, alpha)
    import numpy as np  # a tenth of a second to import: only when a group has others beside it

    rest_weight, below = _rest_table(others, either)
    sizes = np.arange(rest.start, rest.stop)
    # the improved pairs of the group, over every count of its changed pairs at once: row g
    # holds Bin(N_g, s) over its own window, which starts at starts[g]
    counts = np.arange(group.start, group.stop)[:, None]
    spread = _SDS * np.sqrt(counts * share * (1 - share))
    starts = np.maximum(0, np.floor(counts * share - spread) - 2).astype(int)
    width = int((np.ceil(counts * share + spread) + 3 - starts).max())
    x = starts + np.arange(width)[None, :]
    factorial = _log_factorial(group.stop + width)
    inside = x <= counts
    logs = (
        factorial[counts] - factorial[np.minimum(x, counts)] - factorial[np.maximum(counts - x, 0)]
    )
    if 0.0 < share < 1.0:
        chances = np.exp(logs + x * math.log(share) + (counts - x) * math.log1p(-share))
    else:
        chances = (x == (counts if share >= 1.0 else 0)).astype(float)
    chances = np.where(inside, chances, 0.0)
    least = group.start + rest.start
    critical = np.array([_critical(count, alpha) for count in range(least, group.stop + rest.stop)])
    weights = _pmf(n, min(1.0, change), group)
    step = max(1, _CHUNK // (len(rest) * width))
    total = 0.0
    for first in range(0, len(group), step):
        part = slice(first, first + step)
        room = critical[(counts[part] + sizes[None, :] - least)][:, :, None] - x[part][:, None, :]
        cdf = np.where(
            room < 0, 0.0, below[np.arange(len(rest))[None, :, None], np.clip(room, 0, rest.stop)]
        )
        inner = np.einsum("gri,gi->gr", cdf, chances[part])
        total += float(weights[part] @ inner @ rest_weight)
    return min(1.0, max(0.0, total))


def _pmf(count: int, p: float, counts: range) -> Any:
    """P(Bin(count, p) = x) for x in `counts`, as a numpy array."""
    import numpy as np

    x = np.arange(counts.start, counts.stop)
    if p <= 0.0 or p >= 1.0:
        return (x == (count if p >= 1.0 else 0)).astype(float)
    logs = (
        _log_factorial(count)[count] - _log_factorial(count)[x] - _log_factorial(count)[count - x]
    )
    return np.exp(logs + x * math.log(p) + (count - x) * math.log1p(-p))


_FACTORIALS: list[Any] = []


def _log_factorial(count: int) -> Any:
    """log(i!) for i = 0 .. at least `count`, as a numpy array, grown as needed."""
    import numpy as np

    if not _FACTORIALS or len(_FACTORIALS[0]) <= count:
        size = max(count + 1, 2 * len(_FACTORIALS[0]) if _FACTORIALS else 1024)
        table = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, size)))))
        _FACTORIALS[:] = [table]
    return _FACTORIALS[0]


@lru_cache(maxsize=32)
def _rest_table(others: int, either: float) -> tuple[Any, Any]:
    """The chances of each number N_o of changed pairs among `others` (over its window), and
    P(Bin(N_o, ½) ≤ x) for each N_o (rows) and x = 0 .. the largest N_o (columns)."""
    import numpy as np

    rest = _window(others, min(1.0, 2 * either))
    below = np.ones((len(rest), rest.stop + 1))
    for row, count in enumerate(rest):
        below[row, : count + 1] = np.cumsum(_pmf(count, 0.5, range(count + 1)))
    return _pmf(others, min(1.0, 2 * either), rest), below


def _beside_normal(
    n: int, improve: float, regress: float, others: int, either: float, alpha: float
) -> float:
    """`beside` from the normal approximation: the sign test rejects when D = regressed −
    improved reaches t(N) = N − 2 c(N), linearized around the mean number of changed pairs."""
    change = improve + regress
    mean_n = n * change + others * 2 * either
    mean_d = n * (regress - improve)
    var_n = n * change * (1 - change) + others * 2 * either * (1 - 2 * either)
    var_d = n * (change - (regress - improve) ** 2) + others * 2 * either
    cov = n * (regress - improve) * (1 - change)

    def threshold_at(count: int) -> int:
        return count - 2 * _critical(count, alpha)

    centre = max(1, round(mean_n))
    step = max(1, min(centre - 1, round(3 * math.sqrt(var_n)) + 10))
    threshold = threshold_at(centre)
    slope = (threshold_at(centre + step) - threshold_at(max(1, centre - step))) / (2 * step)
    spread = var_d + slope * slope * var_n - 2 * slope * cov
    if spread <= 0:
        return float(mean_d - slope * (mean_n - centre) >= threshold)
    z = (mean_d - slope * (mean_n - centre) - threshold + 1) / math.sqrt(spread)
    return 0.5 * math.erfc(-z / math.sqrt(2))
