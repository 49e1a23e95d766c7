"""Error bars and paired comparisons of pass rates (docs/statistics.md).

The unit is the case: the attempts of a case are one cluster, summed up in its pass rate
`s_i`. Every figure here is a plain formula over those rates; docs/statistics.md explains
each one with a worked example. The power of a comparison, which needs more than a
formula, is in `core.power`. Plain Python with `math` only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

Z95 = 1.96
"""The two-sided 95 % quantile of the normal distribution."""
ALPHA = 0.05
"""The default significance level of a comparison."""
EXACT_UP_TO = 1000
"""Up to this many changed pairs the sign test is computed in whole numbers, exactly; above,
in floating point from the logarithms of its terms (relative error below 1e-9)."""

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True, slots=True)
class RateFigures:
    """The error bars of a group's pass rate: the mean of its case rates."""

    n: int
    pass_rate: float | None
    stderr: float | None
    ci95: tuple[float, float] | None


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def clustered_stderr(rates: Sequence[float]) -> float | None:
    """The stderr of the mean case rate: sqrt(Σ (s_i − p)² / (n (n − 1))); None for n < 2."""
    n = len(rates)
    if n < 2:
        return None
    p = _mean(rates)
    return math.sqrt(math.fsum((rate - p) ** 2 for rate in rates) / (n * (n - 1)))


def wilson(p: float, m: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion `p` from an (effective) sample of size `m`."""
    c = 1 + z * z / m
    centre = (p + z * z / (2 * m)) / c
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / c
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate_figures(rates: Sequence[float]) -> RateFigures:
    """The pass rate of a group of case rates with its stderr and ci95.

    The interval is Wilson's with the effective sample size m = p (1 − p) / stderr², which
    makes it as wide as the clustered stderr says, while staying inside [0, 1]; when that
    is undefined (p is 0 or 1, or the stderr is 0 or unknown), m is the number of cases.
    """
    n = len(rates)
    if n == 0:
        return RateFigures(0, None, None, None)
    p = _mean(rates)
    stderr = clustered_stderr(rates)
    m = p * (1 - p) / stderr**2 if stderr and 0 < p < 1 else float(n)
    return RateFigures(n, p, stderr, wilson(p, m))


def log_binomial_pmf(i: int, n: int, p: float) -> float:
    """log P(Bin(n, p) = i), for 0 ≤ i ≤ n and 0 < p < 1."""
    return (
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
    )


_NEGLIGIBLE = 1e-17


def binomial_cdf(i: int, n: int, p: float) -> float:
    """P(Bin(n, p) ≤ i), in floating point.

    Below the mode the lower tail is summed from `i` down, above it the upper tail from
    `i + 1` up, each from its largest term until the terms no longer count: O(√n) terms.
    """
    if i < 0:
        return 0.0
    if i >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    odds = p / (1 - p)
    if i < (n + 1) * p - 1:
        term = math.exp(log_binomial_pmf(i, n, p))
        total = term
        j = i
        while j > 0 and term > _NEGLIGIBLE * total:
            term *= j / ((n - j + 1) * odds)
            total += term
            j -= 1
        return min(1.0, total)
    term = math.exp(log_binomial_pmf(i + 1, n, p))
    total = term
    j = i + 1
    while j < n and term > _NEGLIGIBLE * total:
        term *= (n - j) / (j + 1) * odds
        total += term
        j += 1
    return max(0.0, 1.0 - total)


def _half_tail(j: int, n: int) -> float:
    """P(Bin(n, ½) ≤ j): exact (as the nearest float) up to `EXACT_UP_TO` trials."""
    if n > EXACT_UP_TO:
        return binomial_cdf(j, n, 0.5)
    term = total = 1
    for i in range(j):
        term = term * (n - i) // (i + 1)
        total += term
    return total / (1 << n)


def sign_test(improved: int, regressed: int) -> float:
    """The two-sided exact sign test over the changed pairs; 1 when none changed.

    With N = improved + regressed and j = min(improved, regressed):
    p = min(1, 2 · Σ_{i=0..j} C(N, i) / 2^N). With one attempt per case this is McNemar's
    exact test.
    """
    total = improved + regressed
    if total == 0:
        return 1.0
    return min(1.0, 2 * _half_tail(min(improved, regressed), total))


def holm(p_values: Mapping[Key, float]) -> dict[Key, float]:
    """Holm's step-down adjustment of a family of p-values, by the same keys.

    Sorted ascending, the i-th of m (from 1) becomes max over j ≤ i of min(1, (m − j + 1) p_j).
    Tied p-values get the same adjusted value, whatever their order.
    """
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    size = len(ordered)
    adjusted: dict[Key, float] = {}
    running = 0.0
    for index, (key, p) in enumerate(ordered):
        running = max(running, min(1.0, (size - index) * p))
        adjusted[key] = running
    return {key: adjusted[key] for key in p_values}


def overall_first(p_values: Mapping[Key, float], first: Key) -> dict[Key, float]:
    """The adjusted p-values of the gate's family: `first` alone at full alpha, then the
    others with Holm among themselves, tested only once `first` is significant (serial
    gatekeeping, docs/statistics.md#the-gates-family-overall-first).

    `first` keeps its own p; each other becomes the larger of that and its Holm p among the
    others, so it is significant at alpha exactly when both are. The chance of a false
    alarm over the family stays at most alpha: while `first` has not changed, any later
    rejection needs its false rejection first (at most alpha); once it has, Holm holds the
    others at alpha. A `first` missing from `p_values` counts as p = 1.
    """
    head = p_values.get(first, 1.0)
    others = holm({key: p for key, p in p_values.items() if key != first})
    return {key: head if key == first else max(head, others[key]) for key in p_values}


@dataclass(frozen=True, slots=True)
class PairedFigures:
    """Two runs' rates over the same cases: the change, its error bar and the sign test."""

    pairs: int
    pass_rate: float | None
    baseline_pass_rate: float | None
    delta: float | None
    stderr: float | None
    ci95: tuple[float, float] | None
    improved: int
    regressed: int
    unchanged: int
    p_value: float

    @property
    def changed(self) -> int:
        """The pairs whose rate went up or down: those the sign test counts."""
        return self.improved + self.regressed


def paired_figures(now: Sequence[float], baseline: Sequence[float]) -> PairedFigures:
    """Compare the case rates `now` with those of the same cases in `baseline`, pair by pair.

    With d_i = now_i − baseline_i: delta is the mean d_i, stderr the sample standard
    deviation of d_i over sqrt(n), ci95 = delta ± 1.96 stderr, and p the sign test over
    the pairs that changed.
    """
    if len(now) != len(baseline):
        raise ValueError("paired rates must have the same length")
    n = len(now)
    differences = [a - b for a, b in zip(now, baseline, strict=True)]
    improved = sum(1 for d in differences if d > 0)
    regressed = sum(1 for d in differences if d < 0)
    p_value = sign_test(improved, regressed)
    if n == 0:
        return PairedFigures(0, None, None, None, None, None, 0, 0, 0, p_value)
    delta = _mean(differences)
    stderr: float | None = None
    ci95: tuple[float, float] | None = None
    if n >= 2:
        variance = math.fsum((d - delta) ** 2 for d in differences) / (n - 1)
        stderr = math.sqrt(variance / n)
        ci95 = (delta - Z95 * stderr, delta + Z95 * stderr)
    return PairedFigures(
        pairs=n,
        pass_rate=_mean(now),
        baseline_pass_rate=_mean(baseline),
        delta=delta,
        stderr=stderr,
        ci95=ci95,
        improved=improved,
        regressed=regressed,
        unchanged=n - improved - regressed,
        p_value=p_value,
    )


def verdict(delta: float | None, p_value: float, alpha: float = ALPHA) -> Verdict:
    """`regressed` or `improved` when the change is significant at `alpha`, else `unchanged`."""
    if delta is None or p_value >= alpha:
        return "unchanged"
    if delta < 0:
        return "regressed"
    return "improved" if delta > 0 else "unchanged"
