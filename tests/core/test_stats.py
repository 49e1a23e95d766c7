"""The formulas of SPEC.md section 10, against values worked out by hand."""

from __future__ import annotations

import pytest

from soev_pipeline.core.stats import (
    case_variance,
    cases_needed,
    detectable_drop,
    holm,
    paired_figures,
    rate_figures,
    sign_test,
    verdict,
)

approx = pytest.approx


def test_no_case_has_no_figures() -> None:
    figures = rate_figures([])
    assert (figures.n, figures.pass_rate, figures.stderr) == (0, None, None)
    assert figures.ci95 is None and figures.detectable_drop is None


def test_one_case_has_an_interval_of_size_one_and_no_stderr() -> None:
    # p = 1, m = n = 1: c = 4.8416, centre = 2.9208 / c, half = 1.96 · 0.98 / c
    figures = rate_figures([1.0])
    assert figures.stderr is None and figures.detectable_drop is None
    assert figures.ci95 == (approx(0.206544, abs=1e-6), approx(1.0))


def test_two_cases_one_pass_one_fail() -> None:
    # p = 0.5, stderr = sqrt(0.5 / 2) = 0.5, m = 0.25 / 0.25 = 1
    figures = rate_figures([1.0, 0.0])
    assert figures.pass_rate == 0.5 and figures.stderr == approx(0.5)
    assert figures.ci95 == (approx(0.054619, abs=1e-6), approx(0.945381, abs=1e-6))
    assert figures.detectable_drop == approx(2.8016 * 2**0.5 * 0.5)


def test_all_pass_and_all_fail_use_the_number_of_cases() -> None:
    # stderr = 0, so m = n = 4: c = 1.9604, centre = 1.4802 / c, half = 1.96 · 0.245 / c
    passed = rate_figures([1.0] * 4)
    assert passed.stderr == 0.0 and passed.detectable_drop == 0.0
    assert passed.ci95 == (approx(0.510100, abs=1e-6), approx(1.0))
    failed = rate_figures([0.0] * 4)
    assert failed.ci95 == (approx(0.0, abs=1e-12), approx(0.489900, abs=1e-6))


def test_fractional_case_rates_with_three_attempts() -> None:
    # p = 0.75; Σ(s − p)² = 0.305556; stderr = sqrt(0.305556 / 12) = 0.159571; m = 7.36364
    figures = rate_figures([1.0, 2 / 3, 1 / 3, 1.0])
    assert figures.pass_rate == approx(0.75)
    assert figures.stderr == approx(0.159571, abs=1e-6)
    assert figures.ci95 == (approx(0.396661, abs=1e-5), approx(0.931931, abs=1e-5))
    assert figures.detectable_drop == approx(0.632231, abs=1e-5)


@pytest.mark.parametrize(
    ("improved", "regressed", "expected"),
    [
        (0, 0, 1.0),  # no changed pairs
        (3, 3, 1.0),  # 2 · 42 / 64 > 1
        (0, 6, 0.03125),  # 2 · 1 / 64
        (1, 7, 0.0703125),  # 2 · (1 + 8) / 256
        (1, 0, 1.0),  # 2 · 1 / 2
    ],
)
def test_sign_test(improved: int, regressed: int, expected: float) -> None:
    assert sign_test(improved, regressed) == approx(expected)


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


def test_case_variance_splits_attempt_noise_from_case_differences() -> None:
    # total = 0.305556 / 3 = 0.101852; within = mean of s(1 − s) · 3/2 = 1/6
    parts = case_variance([1.0, 2 / 3, 1 / 3, 1.0], k=3)
    assert parts.within == approx(1 / 6)
    assert parts.between == approx(0.101852 - 1 / 18, abs=1e-6)
    assert parts.at(3) == approx(0.101852, abs=1e-6)
    assert parts.at(1) > parts.at(3) > parts.at(10)
    single = case_variance([1.0, 0.0, 1.0, 1.0], k=1)
    assert single.within == 0.0 and single.at(5) == single.at(1) == approx(0.25)


def test_power() -> None:
    # n = 2 · 2.8016² · 0.25 / 0.1² = 392.45 → 393
    assert cases_needed(0.25, 0.1) == 393
    assert cases_needed(0.0, 0.1) == 2
    assert detectable_drop(0.25, 393) == approx(0.0999, abs=1e-3)
    assert detectable_drop(0.25, 0) is None
    with pytest.raises(ValueError):
        cases_needed(0.25, 0.0)
