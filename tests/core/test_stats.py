"""The formulas of docs/statistics.md, against values worked out by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from soev_pipeline.core.stats import (
    binomial_cdf,
    holm,
    overall_first,
    paired_figures,
    rate_figures,
    sign_test,
    verdict,
)

approx = pytest.approx


def test_no_case_has_no_figures() -> None:
    figures = rate_figures([])
    assert (figures.n, figures.pass_rate, figures.stderr, figures.ci95) == (0, None, None, None)


def test_one_case_has_an_interval_of_size_one_and_no_stderr() -> None:
    # p = 1, m = n = 1: c = 4.8416, centre = 2.9208 / c, half = 1.96 · 0.98 / c
    figures = rate_figures([1.0])
    assert figures.stderr is None
    assert figures.ci95 == (approx(0.206544, abs=1e-6), approx(1.0))


def test_two_cases_one_pass_one_fail() -> None:
    # p = 0.5, stderr = sqrt(0.5 / 2) = 0.5, m = 0.25 / 0.25 = 1
    figures = rate_figures([1.0, 0.0])
    assert figures.pass_rate == 0.5 and figures.stderr == approx(0.5)
    assert figures.ci95 == (approx(0.054619, abs=1e-6), approx(0.945381, abs=1e-6))


def test_all_pass_and_all_fail_use_the_number_of_cases() -> None:
    # stderr = 0, so m = n = 4: c = 1.9604, centre = 1.4802 / c, half = 1.96 · 0.245 / c
    passed = rate_figures([1.0] * 4)
    assert passed.stderr == 0.0
    assert passed.ci95 == (approx(0.510100, abs=1e-6), approx(1.0))
    failed = rate_figures([0.0] * 4)
    assert failed.ci95 == (approx(0.0, abs=1e-12), approx(0.489900, abs=1e-6))


def test_fractional_case_rates_with_three_attempts() -> None:
    # p = 0.75; Σ(s − p)² = 0.305556; stderr = sqrt(0.305556 / 12) = 0.159571; m = 7.36364
    figures = rate_figures([1.0, 2 / 3, 1 / 3, 1.0])
    assert figures.pass_rate == approx(0.75)
    assert figures.stderr == approx(0.159571, abs=1e-6)
    assert figures.ci95 == (approx(0.396661, abs=1e-5), approx(0.931931, abs=1e-5))


@pytest.mark.parametrize(
    ("improved", "regressed", "expected"),
    [
        (0, 0, 1.0),  # no changed pairs
        (3, 3, 1.0),  # 2 · 42 / 64 > 1
        (0, 6, 0.03125),  # 2 · 1 / 64
        (1, 7, 0.0703125),  # 2 · (1 + 8) / 256
        (1, 0, 1.0),  # 2 · 1 / 2
        (0, 5, 0.0625),  # 2 / 32: five changed pairs never reach 0.05
        (1, 9, 0.021484375),  # 2 · (1 + 10) / 1024
    ],
)
def test_sign_test(improved: int, regressed: int, expected: float) -> None:
    assert sign_test(improved, regressed) == expected  # exact: dyadic fractions


def _exact(j: int, n: int) -> float:
    return float(min(Fraction(1), Fraction(2 * sum(math.comb(n, i) for i in range(j + 1)), 2**n)))


@pytest.mark.parametrize(
    ("improved", "regressed"), [(990, 1010), (950, 1100), (0, 1500), (700, 800)]
)
def test_the_sign_test_of_many_pairs_holds_to_the_exact_fraction(
    improved: int, regressed: int
) -> None:
    # above 1000 changed pairs the tail is summed in floating point
    assert sign_test(improved, regressed) == approx(
        _exact(improved, improved + regressed), rel=1e-9
    )


@pytest.mark.parametrize(
    ("i", "n", "p", "expected"),
    [
        (-1, 5, 0.3, 0.0),
        (5, 5, 0.3, 1.0),
        (0, 3, 0.5, 0.125),
        (1, 4, 0.25, 0.73828125),  # (81 + 108) / 256
        (2, 4, 0.25, 0.94921875),  # (81 + 108 + 54) / 256
        (3, 10, 0.0, 1.0),
        (3, 10, 1.0, 0.0),
    ],
)
def test_binomial_cdf(i: int, n: int, p: float, expected: float) -> None:
    assert binomial_cdf(i, n, p) == approx(expected, abs=1e-12)


def test_binomial_cdf_of_many_trials_both_sides_of_the_mode() -> None:
    n, p = 3000, 0.3
    terms = [math.comb(n, j) * 3**j * 7 ** (n - j) for j in range(1101)]
    for i in (700, 880, 900, 950, 1100):
        exact = Fraction(sum(terms[: i + 1]), 10**n)
        assert binomial_cdf(i, n, p) == approx(float(exact), rel=1e-9, abs=1e-15)


def test_paired_differences() -> None:
    # d = [0, 1, 0, 1]: delta 0.5, sd sqrt(1/3), stderr sqrt(1/12) = 0.288675
    figures = paired_figures([1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0])
    assert (figures.pairs, figures.improved, figures.regressed, figures.unchanged) == (4, 2, 0, 2)
    assert (figures.pass_rate, figures.baseline_pass_rate, figures.delta) == (0.75, 0.25, 0.5)
    assert figures.stderr == approx(0.288675, abs=1e-6)
    assert figures.ci95 == (approx(-0.065803, abs=1e-6), approx(1.065803, abs=1e-6))
    assert figures.p_value == approx(0.5)


def test_no_changed_pairs() -> None:
    figures = paired_figures([1.0, 0.5], [1.0, 0.5])
    assert (figures.delta, figures.stderr, figures.ci95) == (0.0, 0.0, (0.0, 0.0))
    assert figures.p_value == 1.0 and figures.unchanged == 2
    assert verdict(figures.delta, figures.p_value) == "unchanged"


def test_as_many_improvements_as_regressions() -> None:
    figures = paired_figures([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0])
    assert figures.delta == 0.0 and figures.p_value == 1.0


def test_fractional_pairs_and_small_groups() -> None:
    one = paired_figures([2 / 3], [1.0])
    assert one.delta == approx(-1 / 3) and one.stderr is None and one.ci95 is None
    assert one.regressed == 1 and one.p_value == 1.0
    empty = paired_figures([], [])
    assert empty.pairs == 0 and empty.delta is None and empty.p_value == 1.0


def test_verdicts() -> None:
    assert verdict(-0.2, 0.01) == "regressed"
    assert verdict(0.2, 0.01) == "improved"
    assert verdict(-0.2, 0.05) == "unchanged"  # p must be below alpha
    assert verdict(-0.2, 0.04, alpha=0.01) == "unchanged"
    assert verdict(None, 0.0) == "unchanged"


def test_holm_with_ties() -> None:
    # sorted: a .01, d .01, c .03, b .04 → .04, max(.04, .03), max(.04, .06), max(.06, .04)
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.01})
    assert adjusted == {"a": approx(0.04), "b": approx(0.06), "c": approx(0.06), "d": approx(0.04)}
    assert list(adjusted) == ["a", "b", "c", "d"]
    assert holm({"x": 0.6, "y": 0.7}) == {"x": 1.0, "y": approx(1.0)}
    assert holm({}) == {}


def test_overall_first_then_holm_over_the_others() -> None:
    # overall .03 stands alone; the others by Holm: b .01 · 2 = .02, c .04 · 1 = .04 (at
    # least .02), each then at least overall's .03
    adjusted = overall_first({"b": 0.01, "overall": 0.03, "c": 0.04}, "overall")
    assert adjusted == {"b": approx(0.03), "overall": approx(0.03), "c": approx(0.04)}
    assert list(adjusted) == ["b", "overall", "c"]
    # overall not significant: nothing else is, however small its own p
    blocked = overall_first({"overall": 0.2, "b": 0.0001}, "overall")
    assert blocked == {"overall": 0.2, "b": 0.2}
    # overall without a changed pair is missing from the family: p = 1 for every other
    assert overall_first({"b": 0.001}, "overall") == {"b": 1.0}
    assert overall_first({}, "overall") == {}
