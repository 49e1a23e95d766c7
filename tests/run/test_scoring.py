"""Scoring (docs/runs.md#scoring): weights, gates, errors, not_applicable, threshold, pass@k."""

from __future__ import annotations

import pytest

from soev_pipeline.core import Verdict
from soev_pipeline.run.scoring import (
    AttemptScore,
    aggregate,
    can_fail,
    case_figures,
    pass_at_k_estimate,
    score_attempt,
)


def v(status: str, weight: float = 1.0, gate: bool = False) -> Verdict:
    return Verdict(kind="k", status=status, weight=weight, gate=gate)  # type: ignore[arg-type]


def test_weights() -> None:
    score = score_attempt([v("pass", 3), v("fail", 1)], pass_threshold=0.7)
    assert score.score == pytest.approx(0.75)
    assert score.passed
    assert not score_attempt([v("pass", 3), v("fail", 1)], pass_threshold=1.0).passed


def test_all_not_applicable_has_no_score_and_passes() -> None:
    score = score_attempt([v("not_applicable"), v("not_applicable", gate=True)])
    assert score == AttemptScore(None, True)


def test_no_verdicts() -> None:
    assert score_attempt([]) == AttemptScore(None, True)


def test_an_error_fails_the_attempt_but_not_the_score() -> None:
    score = score_attempt([v("pass"), v("error")])
    assert score.score == 1.0
    assert not score.passed


def test_a_failing_gate_zeroes_the_score() -> None:
    score = score_attempt([v("pass", 5), v("fail", 1, gate=True)], pass_threshold=0.0)
    assert score.score == 0.0
    assert not score.passed


def test_an_erroring_gate_zeroes_the_score() -> None:
    score = score_attempt([v("pass"), v("error", gate=True)], pass_threshold=0.0)
    assert score.score == 0.0 and not score.passed


def test_a_passing_gate_counts_like_any_verdict() -> None:
    score = score_attempt([v("pass", 1, gate=True), v("fail", 1)], pass_threshold=0.5)
    assert score.score == 0.5 and score.passed


def test_not_applicable_counts_in_neither() -> None:
    score = score_attempt([v("pass"), v("not_applicable", 10)])
    assert score.score == 1.0 and score.passed


def test_zero_weights_give_no_score() -> None:
    score = score_attempt([v("fail", 0), v("pass", 0)])
    assert score.score is None


def test_threshold_boundary() -> None:
    assert score_attempt([v("pass", 2), v("fail", 1)], pass_threshold=2 / 3).passed


def test_case_figures() -> None:
    figures = case_figures(
        [AttemptScore(1.0, True), AttemptScore(0.5, False), AttemptScore(None, True)]
    )
    assert figures.pass_rate == pytest.approx(2 / 3)
    assert figures.mean_score == pytest.approx(0.75)
    assert figures.pass_at_k and not figures.pass_all_k
    none = case_figures([AttemptScore(None, False)])
    assert none.mean_score is None and not none.pass_at_k


def test_pass_at_k_estimator() -> None:
    assert pass_at_k_estimate(5, 0, 1) == 0.0
    assert pass_at_k_estimate(5, 5, 3) == 1.0
    assert pass_at_k_estimate(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k_estimate(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k_estimate(4, 2, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k_estimate(3, 1, 4)


def test_aggregate_means_of_case_figures() -> None:
    a = case_figures([AttemptScore(1.0, True), AttemptScore(0.0, False)])
    b = case_figures([AttemptScore(1.0, True), AttemptScore(1.0, True)])
    figures = aggregate([a, b], k=2)
    assert figures.cases == 2 and figures.attempts == 4
    assert figures.passed_attempts == 3
    assert figures.pass_rate == pytest.approx(0.75)
    assert figures.mean_score == pytest.approx(0.75)
    assert figures.pass_at_k == 1.0
    assert figures.pass_all_k == 0.5
    assert figures.pass_at == {"1": pytest.approx(0.75), "2": 1.0}


def test_aggregate_of_nothing() -> None:
    figures = aggregate([], k=1)
    assert figures.cases == 0 and figures.pass_rate is None and figures.pass_at == {}


@pytest.mark.parametrize("status", ["pass", "fail", "error", "not_applicable"])
@pytest.mark.parametrize("weight", [0.0, 1.0])
@pytest.mark.parametrize("gate", [False, True])
def test_can_fail_says_which_verdicts_fail_an_otherwise_passing_attempt(
    status: str, weight: float, gate: bool
) -> None:
    passed = score_attempt([v("pass"), v(status, weight, gate)]).passed
    assert can_fail(status, weight=weight, gate=gate) is not passed
