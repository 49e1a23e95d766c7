"""The corrected rate (Rogan–Gladen) and its interval, against values worked by hand and a
small simulation of its coverage (bench/calibration.py runs the full table)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from soev_pipeline.calibration import (
    Correction,
    correct,
    corrected_interval,
    judged_rate,
    rogan_gladen,
    youden_interval,
)
from soev_pipeline.calibration.corrected import NO_RATE, NO_RECALLS, JudgedRate
from soev_pipeline.core.stats import wilson


def test_rogan_gladen_by_hand() -> None:
    # (q + s − 1)/(r + s − 1) = (.75 + .9 − 1)/(.8 + .9 − 1) = .65/.7
    assert rogan_gladen(0.75, 0.8, 0.9) == pytest.approx(0.928571, abs=1e-6)
    assert rogan_gladen(0.6, 1.0, 1.0) == pytest.approx(0.6)  # a perfect judge changes nothing


def test_rogan_gladen_clips_and_refuses_a_judge_no_better_than_chance() -> None:
    assert rogan_gladen(0.05, 0.9, 0.9) == 0.0  # (.05 − .1)/.8 < 0
    assert rogan_gladen(0.99, 0.9, 0.95) == 1.0  # (.94)/.85 > 1
    assert rogan_gladen(0.7, 0.5, 0.5) is None  # r + s − 1 = 0
    assert rogan_gladen(0.7, 0.4, 0.5) is None


def test_the_judged_rate_is_clustered_by_case() -> None:
    rate = judged_rate([(2, 3), (3, 3), (0, 3), (1, 3)])
    # q = 6/12 = .5; a_i − q m_i = .5, 1.5, −1.5, −.5; Σ² = 5; stderr = sqrt(5/12)/3 = .215166
    # effective size = q(1 − q)/stderr² = .25/.0462963 = 5.4
    assert (rate.passed, rate.verdicts, rate.cases, rate.rate) == (6, 12, 4, 0.5)
    assert rate.effective == pytest.approx(5.4)


def test_the_effective_size_is_the_verdicts_where_the_stderr_says_nothing() -> None:
    assert judged_rate([(2, 3)]).effective == 3  # one case
    assert judged_rate([(0, 2), (0, 1)]).effective == 3  # q = 0
    assert judged_rate([(1, 2), (1, 2)]).effective == 4  # stderr 0
    assert judged_rate([(1, 1), (0, 1), (1, 1), (0, 1)]).effective == pytest.approx(3.0)
    # never more than the verdicts, when cases disagree less than chance would make them
    assert judged_rate([(5, 10), (5, 10), (4, 10), (6, 10)]).effective == 40
    assert judged_rate([]) == JudgedRate(0, 0, 0, 0.0)
    assert judged_rate([(0, 0)]).rate is None


def test_the_interval_needs_a_rate_and_items_of_both_kinds() -> None:
    rate = judged_rate([(1, 1), (0, 1)] * 10)
    assert corrected_interval(rate, 10, 10, 0, 0) is None
    assert corrected_interval(rate, 0, 0, 10, 10) is None
    assert corrected_interval(judged_rate([]), 10, 10, 10, 10) is None


def test_the_interval_is_the_same_for_the_same_figures() -> None:
    rate = judged_rate([(1, 1)] * 30 + [(0, 1)] * 10)
    first = corrected_interval(rate, 20, 24, 10, 16)
    assert first is not None and first == corrected_interval(rate, 20, 24, 10, 16)
    # the corrected rate is (.75 + .625 − 1)/(.8333 + .625 − 1) = .8182: inside
    assert first[0] < 0.8182 < first[1]


@pytest.mark.parametrize(
    ("q", "n", "hits_r", "n_r", "hits_s", "n_s"),
    list(
        itertools.product((0.02, 0.5, 0.9, 1.0), (10, 300), (0, 20, 25), (25,), (2, 14, 15), (15,))
    ),
)
def test_the_interval_is_never_narrower_than_wilsons_of_q_alone(
    q: float, n: int, hits_r: int, n_r: int, hits_s: int, n_s: int
) -> None:
    passed = round(q * n)
    rate = judged_rate([(1, 1)] * passed + [(0, 1)] * (n - passed))
    found = corrected_interval(rate, hits_r, n_r, hits_s, n_s)
    assert found is not None
    low, high = wilson(passed / n, rate.effective)
    assert 0.0 <= found[0] <= found[1] <= 1.0
    assert found[1] - found[0] >= high - low - 1e-12


def test_a_judge_the_labels_cannot_tell_from_a_coin_gets_a_wide_interval() -> None:
    rate = judged_rate([(1, 1)] * 60 + [(0, 1)] * 40)
    found = corrected_interval(rate, 5, 10, 5, 10)  # r = s = .5
    assert found is not None and found[1] - found[0] > 0.9


def _coverage(beta: tuple[float, float], r: float, s: float, k: int, sims: int) -> float:
    """How often the interval holds the true rate: 100 cases, 40 labels (60 % passed)."""
    rng = np.random.default_rng(11)
    truth = beta[0] / sum(beta)
    held = counted = 0
    for _ in range(sims):
        pi = rng.beta(*beta, 100)
        passes = rng.binomial(k, pi * r + (1 - pi) * (1 - s))
        rate = judged_rate([(int(x), k) for x in passes])
        human_pass = int(rng.binomial(40, 0.6))
        found = corrected_interval(
            rate,
            int(rng.binomial(human_pass, r)),
            human_pass,
            int(rng.binomial(40 - human_pass, s)),
            40 - human_pass,
        )
        if found is not None:
            counted += 1
            held += found[0] <= truth <= found[1]
    return held / counted


def test_the_interval_covers_the_true_rate_in_a_simulation() -> None:
    """A lenient judge (pass recall 1, fail recall .3, k = 3) is where the delta method
    fails (84-91 % for a 95 % interval); 300 simulated runs keep the Monte-Carlo error of the
    coverage near 1.3 points. bench/calibration.py runs the full table."""
    assert _coverage((0.6, 0.6), 1.0, 0.3, 3, 300) >= 0.92


def test_the_worked_example_of_docs_statistics() -> None:
    """docs/statistics.md: 40 labels (24 passed, 20 by the judge too; 16 failed, 10 by the
    judge too), a run of 60 cases at k = 1 of which the judge passed 45."""
    rate = judged_rate([(1, 1)] * 45 + [(0, 1)] * 15)
    assert rate.effective == pytest.approx(59.0)
    assert rogan_gladen(0.75, 20 / 24, 10 / 16) == pytest.approx(0.818182, abs=1e-6)
    found = corrected_interval(rate, 20, 24, 10, 16)
    assert found == pytest.approx((0.398, 1.0), abs=0.005)
    assert wilson(0.75, rate.effective) == pytest.approx((0.627, 0.843), abs=0.001)


def test_youdens_interval_by_hand() -> None:
    # r = 20/24 = .833333 in Wilson's [.641465, .933214]; s = 10/16 = .625 in [.386406,
    # .815190]; J = .458333; J − hypot(.833333 − .641465, .625 − .386406) = J − .306170,
    # J + hypot(.933214 − .833333, .815190 − .625) = J + .214822
    low, high = youden_interval(20, 24, 10, 16)
    assert (low, high) == pytest.approx((0.152163, 0.673155), abs=1e-5)
    assert youden_interval(12, 12, 12, 12)[0] > 0  # 24 labels without a mistake
    assert youden_interval(1, 1, 1, 1)[0] < 0  # two without a mistake prove nothing


def test_a_correction_says_why_there_is_none() -> None:
    rate = judged_rate([(1, 1)] * 45 + [(0, 1)] * 15)
    assert correct(judged_rate([]), 20, 24, 10, 16) == Correction(None, why=NO_RATE)
    assert correct(rate, 20, 24, 0, 0) == Correction(None, why=NO_RECALLS)
    coin = correct(rate, 12, 24, 8, 16)  # r = s = .5: J = 0
    assert coin.value is None and coin.why is not None
    assert "no better than chance (pass recall + fail recall − 1 = 0.00)" in coin.why
    lucky = correct(rate, 2, 2, 1, 1)  # J = 1 on three labels
    assert lucky.value is None and lucky.why is not None and "includes 0" in lucky.why


def test_a_correction_outside_zero_to_one_is_clipped_and_says_so() -> None:
    rate = judged_rate([(1, 1)] * 45 + [(0, 1)] * 15)  # q = .75
    found = correct(rate, 20, 24, 10, 16)
    assert found.value == pytest.approx(0.818182, abs=1e-6) and not found.clipped
    assert found.interval == corrected_interval(rate, 20, 24, 10, 16)
    high = correct(rate, 14, 20, 20, 20)  # q = .75 > r = .7: (.75 + 0)/.7 > 1
    assert (high.value, high.clipped, high.why) == (1.0, True, None)
    low = correct(judged_rate([(1, 1)] * 5 + [(0, 1)] * 95), 20, 20, 16, 20)
    assert (low.value, low.clipped) == (0.0, True)  # q = .05 < 1 − s = .2


def test_a_judge_no_better_than_a_coin_seldom_gets_a_corrected_rate() -> None:
    """r = s = .5 on 40 labels (60 % passed by people), a run of 100 verdicts: without the
    rule on J's interval, a quarter to a third of such label sets got a corrected rate
    clipped to 0 or 1. J's lower bound is above 0 in about 2.5 % of them."""
    rng = np.random.default_rng(29)
    given = clipped = 0
    sets = 1000
    for _ in range(sets):
        rate = judged_rate([(int(x), 1) for x in rng.binomial(1, 0.5, 100)])
        human_pass = int(rng.binomial(40, 0.6))
        pass_hits = int(rng.binomial(human_pass, 0.5))
        fail_hits = int(rng.binomial(40 - human_pass, 0.5))
        found = correct(rate, pass_hits, human_pass, fail_hits, 40 - human_pass)
        given += found.value is not None
        clipped += found.clipped
    assert given / sets <= 0.05
    assert clipped / sets <= 0.05
