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

from .sign_test import beside, sign_test_power
from .stats import ALPHA, log_binomial_pmf

POWER = 0.8
"""The power that `detectable_drop` and `cases_needed` promise."""
MAX_CASES = 100_000
"""`cases_needed` does not search beyond this many cases; it answers None instead."""
_DROP_TOLERANCE = 1e-6


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
