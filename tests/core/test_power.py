"""The power of the paired sign test under a scale drop, against values worked out by hand."""

from __future__ import annotations

import itertools
import math

import pytest

from soev_pipeline.core.power import (
    CasePopulation,
    Rest,
    cases_needed,
    change_probabilities,
    detectable_drop,
    population_from_attempts,
    population_from_pairs,
    power,
)
from soev_pipeline.core.sign_test import _beside_normal, beside, sign_test_power
from soev_pipeline.core.stats import EXACT_UP_TO, sign_test

approx = pytest.approx


def test_a_population_keeps_its_second_moment_between_its_bounds() -> None:
    assert CasePopulation.of(0.5, 0.1) == CasePopulation(0.5, 0.25)  # at least μ²
    assert CasePopulation.of(0.5, 0.7) == CasePopulation(0.5, 0.5)  # at most μ
    assert CasePopulation.of(1.2, 0.3) == CasePopulation(1.0, 1.0)


def test_the_beta_fit_reproduces_its_moments() -> None:
    # μ = 0.5, E[π²] = 0.3: variance 0.05, so α + β = 0.25 / 0.05 − 1 = 4, α = β = 2.
    # With k = 1, P(X = 1, Z = 1) = B(4, 2) / B(2, 2) = (1/20) / (1/6) = 0.3 = E[π²].
    joint = CasePopulation.of(0.5, 0.3).joint(1)
    assert joint[1][1] == approx(0.3)
    assert joint[1][0] == joint[0][1] == approx(0.2)  # μ − E[π²]
    assert joint[0][0] == approx(0.3)  # 1 − 2μ + E[π²]
    table = CasePopulation.of(0.3, 0.15).joint(3)
    assert math.fsum(value for row in table for value in row) == approx(1.0)
    assert math.fsum(x * sum(row) for x, row in enumerate(table)) / 3 == approx(0.3)


def test_one_attempt_per_case_changes_by_the_two_moments() -> None:
    # improved = f (μ − E[π²]) = 0.8 · 0.2; regressed = μ − f E[π²] = 0.5 − 0.24
    improve, regress = change_probabilities(CasePopulation.of(0.5, 0.3).joint(1), 0.8)
    assert (improve, regress) == (approx(0.16), approx(0.26))


def test_cases_alike_and_cases_all_or_nothing() -> None:
    # π = 0.5 for every case, k = 2, no drop: P(X = Z) = 1/16 + 1/4 + 1/16 = 0.375, and
    # the rest splits evenly
    improve, regress = change_probabilities(CasePopulation.of(0.5, 0.25).joint(2), 1.0)
    assert (improve, regress) == (approx(0.3125), approx(0.3125))
    # π ∈ {0, 1} with μ = 0.4, k = 3, halved: a passing case regresses unless all 3 pass
    improve, regress = change_probabilities(CasePopulation.of(0.4, 0.4).joint(3), 0.5)
    assert (improve, regress) == (0.0, approx(0.4 * 7 / 8))
    # a drop to nothing: every passing attempt fails
    improve, regress = change_probabilities(CasePopulation.of(0.4, 0.4).joint(1), 0.0)
    assert (improve, regress) == (0.0, approx(0.4))


@pytest.mark.parametrize(
    ("n", "improve", "regress", "expected"),
    [
        (6, 0.0, 1.0, 1.0),  # six regressions: p = 2/64
        (5, 0.0, 1.0, 0.0),  # five never reach 0.05: p = 2/32
        (6, 0.0, 0.5, 1 / 64),  # only when all six change
        (7, 0.0, 0.5, 8 / 128),  # six or seven of seven change
        (6, 0.1, 0.9, 0.9**6),  # six change; rejects only without an improvement
        (1, 0.0, 1.0, 0.0),
        (0, 0.0, 1.0, 0.0),
        (50, 0.3, 0.0, 0.0),  # nothing regresses
    ],
)
def test_sign_test_power_by_hand(n: int, improve: float, regress: float, expected: float) -> None:
    assert sign_test_power(n, improve, regress) == approx(expected, abs=1e-12)


def test_sign_test_power_sums_the_multinomial() -> None:
    # n = 10, improve 0.1, regress 0.4: Σ_N P(N) P(Bin(N, 0.2) ≤ c(N)), term by term
    total = 0.0
    for changed in range(11):
        weight = math.comb(10, changed) * 0.5**10
        critical = max(
            (j for j in range(changed + 1) if j < changed - j and sign_test(j, changed - j) < 0.05),
            default=-1,
        )
        total += weight * sum(
            math.comb(changed, i) * 0.2**i * 0.8 ** (changed - i) for i in range(critical + 1)
        )
    assert sign_test_power(10, 0.1, 0.4) == approx(total, rel=1e-12)


def test_critical_values_agree_with_the_sign_test_past_the_exact_range() -> None:
    # the stepwise tail beyond EXACT_UP_TO decides as the sign test does
    from soev_pipeline.core.sign_test import _critical

    for changed in [*range(1, 40), *range(EXACT_UP_TO - 3, EXACT_UP_TO + 300, 7), 5000]:
        c = _critical(changed, 0.05)
        assert c < 0 or sign_test(c, changed - c) < 0.05
        assert sign_test(c + 1, changed - c - 1) >= 0.05


def test_the_detectable_drop_of_cases_that_always_pass() -> None:
    # π = 1 for every case, k = 1: a drop D makes each case regress with probability D and
    # none improve; six cases are rejected only when all six regress: D⁶ = 0.8
    always = CasePopulation.of(1.0, 1.0)
    assert detectable_drop(always, 6, 1) == approx(0.8 ** (1 / 6), abs=2e-6)
    assert detectable_drop(always, 5, 1) is None  # five pairs never reach p < 0.05
    assert detectable_drop(always, 1, 1) is None
    assert detectable_drop(CasePopulation.of(0.0, 0.0), 50, 1) is None


def test_cases_needed_for_cases_that_always_pass() -> None:
    # D = 0.5: power(n) = P(Bin(n, 0.5) ≥ 6); n = 14 gives 1 − 3473/16384 = 0.788,
    # n = 15 gives 1 − 4944/32768 = 0.849
    always = CasePopulation.of(1.0, 1.0)
    assert power(always, 14, 1, 0.5) == approx(1 - 3473 / 16384)
    assert power(always, 15, 1, 0.5) == approx(1 - 4944 / 32768)
    assert cases_needed(always, 0.5, 1) == 15
    assert cases_needed(CasePopulation.of(0.3, 0.2), 0.4, 1) is None  # above the pass rate
    assert cases_needed(CasePopulation.of(0.5, 0.3), 0.0001, 1) is None  # beyond MAX_CASES


def test_the_detectable_drop_is_where_the_power_reaches_80_percent() -> None:
    population = CasePopulation.of(0.6, 0.45)
    for n, k in [(30, 1), (30, 3), (200, 2)]:
        drop = detectable_drop(population, n, k)
        assert drop is not None
        assert power(population, n, k, drop) >= 0.8 > power(population, n, k, drop - 1e-5)
    needed = cases_needed(population, 0.1, 3)
    assert needed is not None
    assert power(population, needed, 3, 0.1) >= 0.8 > power(population, needed - 1, 3, 0.1)


def test_more_attempts_detect_smaller_drops_when_cases_vary_between_attempts() -> None:
    population = CasePopulation.of(0.5, 0.3)
    one, three = detectable_drop(population, 100, 1), detectable_drop(population, 100, 3)
    assert one is not None and three is not None and three < one
    needed_one, needed_three = cases_needed(population, 0.1, 1), cases_needed(population, 0.1, 3)
    assert needed_one is not None and needed_three is not None and needed_three < needed_one


def test_a_population_from_the_attempts() -> None:
    # rates 1, 2/3, 0, 1: μ = 2/3; E[π²] over the cases with 2+ attempts: c(c−1)/(r(r−1))
    # = 1, 1/3, 0: 4/9. One attempt per case cannot say how much a case varies: None.
    population = population_from_attempts([(3, 3), (2, 3), (0, 3), (1, 1)])
    assert population == CasePopulation(approx(2 / 3), approx(4 / 9))
    assert population_from_attempts([(1, 1), (0, 1)]) is None
    assert population_from_attempts([]) is None


def test_a_population_from_a_comparison_at_one_attempt() -> None:
    # 4 of 10 pairs changed: 2 (μ − E[π²]) = 0.4, so E[π²] = 0.5 − 0.2
    assert population_from_pairs(10, 4, 0.5) == CasePopulation(0.5, approx(0.3))
    assert population_from_pairs(10, 10, 0.3) == CasePopulation(0.3, approx(0.09))
    assert population_from_pairs(0, 0, 0.5) is None


def test_a_rest_that_never_changes_costs_nothing() -> None:
    # cases that always pass or always fail never change pair: the sign test does not see them
    group = CasePopulation.of(0.6, 0.45)
    steady = Rest(CasePopulation.of(0.7, 0.7), 500)
    for n, k in [(30, 1), (40, 3)]:
        assert detectable_drop(group, n, k, rest=steady) == detectable_drop(group, n, k)
        assert power(group, n, k, 0.2, rest=steady) == approx(power(group, n, k, 0.2))
    assert cases_needed(group, 0.1, 3, rest=steady) == cases_needed(group, 0.1, 3)


def _enumerated(n: int, improve: float, regress: float, others: int, either: float) -> float:
    """P(the sign test over n + `others` pairs finds a regression), over every outcome."""
    chances = {"up": (improve, either), "down": (regress, either)}
    chances["same"] = (1 - improve - regress, 1 - 2 * either)
    total = 0.0
    for outcome in itertools.product(chances, repeat=n + others):
        weight = math.prod(chances[o][i >= n] for i, o in enumerate(outcome))
        up, down = outcome.count("up"), outcome.count("down")
        if down > up and sign_test(up, down) < 0.05:
            total += weight
    return total


@pytest.mark.parametrize(
    ("n", "improve", "regress", "others", "either"),
    [(6, 0.1, 0.5, 2, 0.2), (5, 0.0, 0.6, 3, 0.25), (7, 0.05, 0.3, 1, 0.1), (4, 0.1, 0.7, 4, 0.3)],
)
def test_a_group_beside_others_against_every_outcome(
    n: int, improve: float, regress: float, others: int, either: float
) -> None:
    expected = _enumerated(n, improve, regress, others, either)
    assert beside(n, improve, regress, others, either) == approx(expected, rel=1e-12)


def test_the_normal_approximation_of_large_groups_beside_others() -> None:
    # beyond its budget `beside` answers from the normal approximation: here near the
    # exact sum, which still runs at this size
    exact = beside(600, 0.1, 0.16, 900, 0.1)
    assert _beside_normal(600, 0.1, 0.16, 900, 0.1, 0.05) == approx(exact, abs=0.005)
    assert beside(20_000, 0.1, 0.11, 5000, 0.1) == _beside_normal(
        20_000, 0.1, 0.11, 5000, 0.1, 0.05
    )


def test_a_drop_in_one_group_is_found_by_the_whole_run() -> None:
    # the noise of the rest costs power: a larger drop, or more cases, is needed
    population = CasePopulation.of(0.6, 0.45)
    rest = Rest(CasePopulation.of(0.6, 0.45), 80)
    alone, beside_ = (
        detectable_drop(population, 40, 3),
        detectable_drop(population, 40, 3, rest=rest),
    )
    assert alone is not None and beside_ is not None and beside_ > alone
    assert (
        power(population, 40, 3, beside_, rest=rest)
        >= 0.8
        > power(population, 40, 3, beside_ - 1e-5, rest=rest)
    )
    needed = cases_needed(population, 0.15, 3, rest=rest)
    assert needed is not None and needed > (cases_needed(population, 0.15, 3) or 0)
    assert power(population, needed, 3, 0.15, rest=rest) >= 0.8
    assert power(population, needed - 1, 3, 0.15, rest=rest) < 0.8
    # a group too small to move the run: no drop is found that often
    assert detectable_drop(population, 5, 3, rest=Rest(population, 200)) is None
