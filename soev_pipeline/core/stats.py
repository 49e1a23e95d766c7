"""Error bars, paired comparisons and power for pass rates (SPEC.md section 10).

The unit is the case: the k attempts of a case are one cluster, summed up in its pass rate
`s_i`. Every figure here is a plain formula over those rates; docs/statistics.md explains
each one with a worked example. Plain Python with `math` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Z95 = 1.96
"""The two-sided 95 % quantile of the normal distribution."""
Z80 = 0.8416
"""The one-sided 80 % quantile: 80 % power."""
ALPHA = 0.05
"""The default significance level of a comparison."""

Verdict = Literal["regressed", "improved", "unchanged"]


@dataclass(frozen=True, slots=True)
class RateFigures:
    """The error bars of a group's pass rate: the mean of its case rates."""

    n: int
    pass_rate: float | None
    stderr: float | None
    ci95: tuple[float, float] | None
    detectable_drop: float | None


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
    """The pass rate of a group of case rates with its stderr, ci95 and detectable drop.

    The interval is Wilson's with the effective sample size m = p (1 − p) / stderr², which
    makes it as wide as the clustered stderr says, while staying inside [0, 1]; when that
    is undefined (p is 0 or 1, or the stderr is 0 or unknown), m is the number of cases.
    """
    n = len(rates)
    if n == 0:
        return RateFigures(0, None, None, None, None)
    p = _mean(rates)
    stderr = clustered_stderr(rates)
    m = p * (1 - p) / stderr**2 if stderr and 0 < p < 1 else float(n)
    drop = (Z95 + Z80) * math.sqrt(2) * stderr if stderr is not None else None
    return RateFigures(n, p, stderr, wilson(p, m), drop)


def sign_test(improved: int, regressed: int) -> float:
    """The two-sided exact sign test over the changed pairs; 1 when none changed.

    With N = improved + regressed and j = min(improved, regressed):
    p = min(1, 2 · Σ_{i=0..j} C(N, i) / 2^N). With one attempt per case this is McNemar's
    exact test.
    """
    total = improved + regressed
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, i) for i in range(min(improved, regressed) + 1))
    return min(1.0, 2 * tail / float(2**total))


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjustment of a family of p-values, by the same names.

    Sorted ascending, the i-th of m (from 1) becomes max over j ≤ i of min(1, (m − j + 1) p_j).
    Tied p-values get the same adjusted value, whatever their order.
    """
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    size = len(ordered)
    adjusted: dict[str, float] = {}
    running = 0.0
    for index, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (size - index) * p))
        adjusted[name] = running
    return {name: adjusted[name] for name in p_values}


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


@dataclass(frozen=True, slots=True)
class CaseVariance:
    """How much case rates vary, split into what differs between cases and attempt noise.

    `between` is the variance of the cases' true pass rates; `within` the mean binomial
    variance p_i (1 − p_i) of one attempt. A case rate over k attempts then varies by
    between + within / k. From a run with one attempt per case the two cannot be told
    apart: all of it counts as `between`, so more attempts are not assumed to help.
    """

    between: float
    within: float

    def at(self, k: int) -> float:
        """The variance of one case's pass rate over `k` attempts."""
        return self.between + self.within / k


def case_variance(rates: Sequence[float], k: int) -> CaseVariance:
    """Estimate the variance parts from the case rates of a run with `k` attempts per case.

    The within-case part is unbiased: s_i (1 − s_i) k / (k − 1) per case. The between-case
    part is the sample variance of the rates less within / k, never below 0.
    """
    n = len(rates)
    if n < 2:
        return CaseVariance(0.0, 0.0)
    p = _mean(rates)
    total = math.fsum((rate - p) ** 2 for rate in rates) / (n - 1)
    if k < 2:
        return CaseVariance(total, 0.0)
    within = _mean([rate * (1 - rate) * k / (k - 1) for rate in rates])
    return CaseVariance(max(0.0, total - within / k), within)


def detectable_drop(variance: float, n: int) -> float | None:
    """The drop that a paired comparison of n cases detects with 80 % power at α = 0.05.

    (1.96 + 0.8416) · sqrt(2) · sqrt(variance / n), as `detectable_drop` of one run.
    """
    if n < 1:
        return None
    return (Z95 + Z80) * math.sqrt(2 * variance / n)


def cases_needed(variance: float, drop: float) -> int:
    """The number of cases whose detectable drop (see above) is at most `drop`.

    n = ⌈ 2 (1.96 + 0.8416)² variance / drop² ⌉, and at least 2 (a stderr needs two cases).
    """
    if drop <= 0:
        raise ValueError("the drop must be above 0")
    return max(2, math.ceil(2 * (Z95 + Z80) ** 2 * variance / drop**2 - 1e-9))
