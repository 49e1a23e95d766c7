"""The power of a paired comparison: `detectable_drop` and `plan`
(docs/statistics.md#power-what-a-suite-detects-and-how-many-cases-it-needs).

`compare` tests a group with the exact sign test over its pairs of case rates. How often
that test notices a drop depends on how the cases' pass probabilities π_i are spread, and
on k. The model (docs/statistics.md, "Power"):

- the cases are drawn from a population of pass probabilities, a Beta distribution fitted
  by its first two moments: the mean pass rate μ and E[π²], which says how much a case
  varies between attempts (π(1 − π) is the variance of one attempt);
- a drop of D is a *scale* drop: every π_i becomes f π_i with f = 1 − D / μ;
- a case's pair changes when its rate over k attempts differs between the runs: it
  improved with probability a and regressed with probability b, averaged over the
  population. The counts of improved and regressed pairs among n cases are multinomial,
  and the power is the exact probability that the sign test rejects at α with more
  regressed than improved pairs.

The gate tests `overall` first and the other groups only when overall is significant
(`core.stats.overall_first`), so the power of the gate against a drop in one group is the
power of the sign test over every pair of the run, the other cases (`Rest`) unchanged;
against a drop of every case it is the power of the overall group alone.

`detectable_drop` searches the drop, `cases_needed` the number of cases, at which that
power is 80 %. `bench/power.py` confirms both by simulation. Plain Python with `math` only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .stats import ALPHA, EXACT_UP_TO, binomial_cdf, log_binomial_pmf

POWER = 0.8
"""The power that `detectable_drop` and `cases_needed` promise."""
MAX_CASES = 100_000
"""`cases_needed` does not search beyond this many cases; it answers None instead."""
_DROP_TOLERANCE = 1e-6
_LOG_WINDOW = math.log(1e-13)
"""Numbers of changed pairs less likely than this (relative to the likeliest) are left out."""
_REFRESH = 256
"""Every so many steps the stepwise tail probability is computed afresh."""


@dataclass(frozen=True, slots=True)
class CasePopulation:
    """The pass probabilities of a group's cases, by their first two moments.

    `mean` is E[π] (the group's pass rate), `second` E[π²]; E[π²] lies between μ² (every
    case passes with the same probability) and μ (each case always passes or always fails).
    """

    mean: float
    second: float

    @classmethod
    def of(cls, mean: float, second: float) -> CasePopulation:
        """A population with E[π] = `mean`, E[π²] = `second` brought into [μ², μ]."""
        mean = min(1.0, max(0.0, mean))
        return cls(mean, min(mean, max(mean * mean, second)))

    def joint(self, k: int) -> list[list[float]]:
        """P(X = x, Z = z) for two independent runs of k attempts of one random case.

        X and Z are Bin(k, π) given π; over the Beta population with these moments their
        joint law is a beta-binomial pair, P = C(k, x) C(k, z) B(α + x + z, β + 2k − x − z)
        / B(α, β). The two ends of the Beta family are taken as they are: π = μ for every
        case, and π ∈ {0, 1}.
        """
        mu = self.mean
        variance = self.second - mu * mu
        spread = mu * (1 - mu)
        table = [[0.0] * (k + 1) for _ in range(k + 1)]
        if spread <= 0 or variance <= 1e-12 * spread:
            single = [
                math.exp(log_binomial_pmf(x, k, mu)) if 0 < mu < 1 else float(x == round(mu * k))
                for x in range(k + 1)
            ]
            for x in range(k + 1):
                for z in range(k + 1):
                    table[x][z] = single[x] * single[z]
            return table
        if variance >= (1 - 1e-12) * spread:
            table[0][0], table[k][k] = 1 - mu, mu
            return table
        size = spread / variance - 1
        a, b = mu * size, (1 - mu) * size
        base = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
        for x in range(k + 1):
            for z in range(k + 1):
                table[x][z] = math.exp(
                    _log_comb(k, x)
                    + _log_comb(k, z)
                    + math.lgamma(a + x + z)
                    + math.lgamma(b + 2 * k - x - z)
                    - math.lgamma(a + b + 2 * k)
                    - base
                )
        return table


def _log_comb(n: int, i: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)


def change_probabilities(joint: list[list[float]], factor: float) -> tuple[float, float]:
    """The probabilities (improved, regressed) of a pair under a scale drop by `factor`.

    The baseline's passes are X; the new run's are Y ~ Bin(k, f π), which is Z ~ Bin(k, π)
    thinned: Y | Z ~ Bin(Z, f). A pair improved when Y > X, regressed when Y < X.
    """
    k = len(joint) - 1
    improved = regressed = 0.0
    for z in range(k + 1):
        if 0 < factor < 1:
            pmf = [math.exp(log_binomial_pmf(y, z, factor)) for y in range(z + 1)]
        else:
            pmf = [float(y == (z if factor >= 1 else 0)) for y in range(z + 1)]
        below = [0.0] * (z + 2)
        for y in range(z + 1):
            below[y + 1] = below[y] + pmf[y]
        for x in range(k + 1):
            weight = joint[x][z]
            if weight == 0.0:
                continue
            less = below[min(x, z + 1)]
            more = below[z + 1] - below[min(x + 1, z + 1)]
            improved += weight * more
            regressed += weight * less
    return improved, regressed


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


@dataclass(frozen=True, slots=True)
class Rest:
    """The cases of the run outside a group, which stay as they were while the group drops.

    The gate tests `overall` first (`core.stats.overall_first`), and nothing else unless
    overall is significant: a drop in one group fails the gate when the sign test over
    every pair of the run finds it, with the rest's pairs changing both ways alike.
    """

    population: CasePopulation
    cases: int


def _gate_power(
    n: int, improve: float, regress: float, rest: Rest | None, k: int, alpha: float
) -> float:
    """The power of the gate when a group of n pairs improves with probability `improve`
    and regresses with `regress`, beside the unchanged `rest`: the sign test over the pairs
    of both (`beside`)."""
    if rest is None or rest.cases <= 0:
        return sign_test_power(n, improve, regress, alpha)
    either, _ = change_probabilities(rest.population.joint(k), 1.0)
    return beside(n, improve, regress, rest.cases, either, alpha)


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


def power(
    population: CasePopulation,
    n: int,
    k: int,
    drop: float,
    alpha: float = ALPHA,
    *,
    rest: Rest | None = None,
) -> float:
    """The power of the gate (`compare --fail-on-regression`) against a scale drop of a
    group of n cases at k attempts; with `rest`, the run's other cases, unchanged."""
    if population.mean <= 0 or drop <= 0:
        return 0.0
    factor = max(0.0, 1 - drop / population.mean)
    improve, regress = change_probabilities(population.joint(k), factor)
    return _gate_power(n, improve, regress, rest, k, alpha)


def detectable_drop(
    population: CasePopulation,
    n: int,
    k: int,
    *,
    rest: Rest | None = None,
    alpha: float = ALPHA,
    target: float = POWER,
) -> float | None:
    """The smallest scale drop in pass rate of a group of n cases at k attempts that the
    gate detects with power `target`, the run's other cases (`rest`) unchanged; None when
    not even a drop to 0 would be (too few cases, or μ = 0)."""
    if n < 2 or population.mean <= 0:
        return None
    joint = population.joint(k)
    mean = population.mean

    def power_at(drop: float) -> float:
        improve, regress = change_probabilities(joint, max(0.0, 1 - drop / mean))
        return _gate_power(n, improve, regress, rest, k, alpha)

    if power_at(mean) < target:
        return None
    low, high = 0.0, mean
    while high - low > _DROP_TOLERANCE:
        middle = (low + high) / 2
        if power_at(middle) >= target:
            high = middle
        else:
            low = middle
    return high


def cases_needed(
    population: CasePopulation,
    drop: float,
    k: int,
    *,
    rest: Rest | None = None,
    alpha: float = ALPHA,
    target: float = POWER,
) -> int | None:
    """The fewest cases at k attempts of a group whose scale drop of `drop` the gate
    detects with power `target`, the run's other cases (`rest`) unchanged; None when
    `drop` exceeds the pass rate or more than `MAX_CASES` would be needed."""
    if drop <= 0 or drop > population.mean:
        return None
    improve, regress = change_probabilities(
        population.joint(k), max(0.0, 1 - drop / population.mean)
    )

    def enough(n: int) -> bool:
        return _gate_power(n, improve, regress, rest, k, alpha) >= target

    high = 2
    while not enough(high):
        if high >= MAX_CASES:
            return None
        high = min(MAX_CASES, high * 2)
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def population_from_attempts(counts: Iterable[tuple[int, int]]) -> CasePopulation | None:
    """The population of a group from its cases' (passed, ran) attempts.

    μ is the mean of passed / ran; E[π²] the mean of the unbiased c (c − 1) / (r (r − 1))
    over the cases with two attempts or more. None without such a case: one attempt per
    case cannot tell how much a case varies between attempts.
    """
    rates: list[float] = []
    squares: list[float] = []
    for passed, ran in counts:
        if ran >= 1:
            rates.append(passed / ran)
        if ran >= 2:
            squares.append(passed * (passed - 1) / (ran * (ran - 1)))
    if not squares:
        return None
    return CasePopulation.of(math.fsum(rates) / len(rates), math.fsum(squares) / len(squares))


def population_from_pairs(pairs: int, changed: int, mean: float) -> CasePopulation | None:
    """The population of a group from a comparison of two runs at one attempt per case.

    Two attempts of one case differ with probability 2 (π − π²), so over the pairs the
    share that changed estimates 2 (μ − E[π²]): E[π²] = μ − changed / (2 · pairs), with μ
    the mean rate of both runs. A real change between the runs makes the estimate
    cautious (the drop it detects looks larger), never bold. None without pairs.
    """
    if pairs < 1:
        return None
    return CasePopulation.of(mean, mean - changed / (2 * pairs))
