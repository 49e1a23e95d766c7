"""The judge against the people, and people against each other: each formula of
docs/statistics.md#the-judge-against-people against values worked by hand (the page shows the
same work)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from soev_pipeline.calibration import (
    LabelLine,
    Outcome,
    ReadLabel,
    agreement_interval,
    agreement_of,
    gather,
    human_agreement,
    kappa,
)
from soev_pipeline.calibration.agreement import Confusion, JudgeStatus, label_confusion

AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def outcomes(*rows: tuple[bool, JudgeStatus, int]) -> list[Outcome]:
    """`(people passed, judge status, how many)` rows as outcomes."""
    return [Outcome(human, judge) for human, judge, count in rows for _ in range(count)]


def test_no_items_gives_no_figures() -> None:
    found = agreement_of([])
    assert found.items == 0 and found.judge_errors == 0
    assert found.agreement is found.kappa is found.kappa_ci95 is None
    assert found.pass_recall is found.fail_recall is found.pass_recall_ci95 is None


def test_one_item_on_which_both_pass_has_no_kappa() -> None:
    found = agreement_of(outcomes((True, "pass", 1)))
    assert found.agreement == 1.0 and found.pass_recall == 1.0 and found.fail_recall is None
    # p_h = p_j = 1: chance agreement is 1, agreement beyond it cannot be measured
    assert found.kappa is None and found.kappa_ci95 is None
    low, high = found.pass_recall_ci95 or (0, 0)
    # Wilson at p = 1, n = 1: centre (1 + z²/2)/(1 + z²) = 0.6029, half z·sqrt(z²/4)/(1 + z²)
    assert (low, high) == pytest.approx((0.2065, 1.0), abs=1e-4)


def test_one_item_on_which_they_differ() -> None:
    found = agreement_of(outcomes((True, "fail", 1)))
    # p_o = 0, p_h = 1, p_j = 0: p_e = 0, κ = 0; p_o's mid-P interval at 0 of 1 is [0, U]
    # with ½ (1 − U) = .025, U = .95, carried to κ as (U − 0)/(1 − 0)
    assert found.agreement == 0.0
    assert found.kappa == 0.0 and found.kappa_ci95 == pytest.approx((0.0, 0.95))
    assert found.pass_recall == 0.0


def test_perfect_agreement_is_kappa_one_with_an_interval_of_some_width() -> None:
    found = agreement_of(outcomes((True, "pass", 3), (False, "fail", 2)))
    # p_o = 1, p_e = .6·.6 + .4·.4 = .52: κ = (1 − .52)/(1 − .52) = 1. p_o's mid-P interval
    # at 5 of 5 is [L, 1] with ½ L⁵ = .025, L = .05^(1/5) = .549280; to κ: (L − .52)/.48
    assert found.agreement == 1.0
    assert found.kappa == 1.0
    assert found.kappa_ci95 == pytest.approx((0.061000, 1.0), abs=1e-6)
    assert found.pass_recall == found.fail_recall == 1.0


def test_two_agreeing_items_prove_little() -> None:
    # the large-sample formula gave "κ 1.00 [1.00, 1.00]" here. L = .05^(1/2) = .223607,
    # p_e = .5: κ from (.223607 − .5)/.5 = −.552786 to 1
    value, interval = kappa(1, 0, 0, 1)
    assert value == 1.0
    assert interval == pytest.approx((-0.552786, 1.0), abs=1e-6)


def test_a_judge_that_always_says_pass_agrees_often_and_has_kappa_zero() -> None:
    found = agreement_of(outcomes((True, "pass", 9), (False, "pass", 1)))
    # 90 % agreement; p_e = .9·1 + .1·0 = .9, so κ = (.9 − .9)/(1 − .9) = 0; p_o's
    # mid-P interval at 9 of 10 is [.596524, .994999] (test_the_mid_p_interval...), to κ
    # (.596524 − .9)/.1 = −3.03, clipped to −1, and (.994999 − .9)/.1 = .94999
    assert found.agreement == pytest.approx(0.9)
    assert found.kappa == 0.0
    assert found.kappa_ci95 == pytest.approx((-1.0, 0.949985), abs=1e-6)
    assert found.pass_recall == 1.0 and found.fail_recall == 0.0


def test_a_worked_table_of_forty_items() -> None:
    found = agreement_of(
        outcomes((True, "pass", 20), (True, "fail", 5), (False, "pass", 3), (False, "fail", 12))
    )
    # p_o = 32/40 = .8; p_h = 25/40, p_j = 23/40; p_e = .625·.575 + .375·.425 = .51875
    # κ = .28125/.48125 = .58442; p_o's mid-P interval at 32 of 40 is [.655321, .902545],
    # to κ: (.655321 − .51875)/.48125 = .283784 and (.902545 − .51875)/.48125 = .797496
    assert found.items == 40 and found.agreement == pytest.approx(0.8)
    assert found.kappa == pytest.approx(0.584416, abs=1e-6)
    assert agreement_interval(32, 40) == pytest.approx((0.655321, 0.902545), abs=1e-6)
    assert found.kappa_ci95 == pytest.approx((0.283784, 0.797496), abs=1e-6)
    # pass recall 20/25 with Wilson's interval: centre .760041, half .151354
    assert found.pass_recall == pytest.approx(0.8)
    assert found.pass_recall_ci95 == pytest.approx((0.608687, 0.911395), abs=1e-6)
    # fail recall 12/15
    assert found.fail_recall == pytest.approx(0.8)
    assert found.fail_recall_ci95 == pytest.approx((0.548141, 0.929526), abs=1e-6)


def test_a_judge_error_counts_as_its_fail() -> None:
    found = agreement_of(outcomes((True, "pass", 2), (True, "error", 1), (False, "error", 1)))
    table = Confusion.of(outcomes((True, "pass", 2), (True, "error", 1), (False, "error", 1)))
    assert (table.pass_error, table.fail_error, table.judge_errors) == (1, 1, 2)
    # an error where people pass is a disagreement; where people fail, an agreement
    assert found.judge_errors == 2 and found.agreement == pytest.approx(0.75)
    assert found.pass_recall == pytest.approx(2 / 3) and found.fail_recall == 1.0


def test_kappa_table_order_and_negative_values() -> None:
    value, interval = kappa(0, 5, 5, 0)
    # always disagreeing, each rater half pass: p_o = 0, p_e = .5, κ = −1; p_o's mid-P
    # interval at 0 of 10 is [0, U], ½ (1 − U)¹⁰ = .025, U = 1 − .05^(1/10) = .258866:
    # κ up to (.258866 − .5)/.5 = −.482269
    assert value == -1.0
    assert interval == pytest.approx((-1.0, -0.482269), abs=1e-6)
    assert kappa(0, 0, 0, 0) == (None, None)
    assert kappa(0, 0, 0, 4) == (None, None)  # both always fail: p_e = 1


def test_human_agreement_counts_every_pair_of_labels_on_an_item() -> None:
    # pairs: [T,F] one mixed; [T,T,F] one agreeing pass and two mixed; [F,F] one agreeing fail
    share, value = human_agreement([[True, False], [True, True, False], [False, False]])
    assert share == pytest.approx(2 / 5)
    # both orders of each pair: a = 2, b = c = 3, d = 2; p_o = .4, p_e = .5, κ = −.2
    assert value == pytest.approx(-0.2)


def test_human_agreement_needs_two_labels_on_an_item() -> None:
    assert human_agreement([[True], [False], []]) == (None, None)
    assert human_agreement([[True, True], [True, True]]) == (1.0, None)  # p_e = 1


def test_label_confusion_rows_are_the_peoples_labels() -> None:
    found = label_confusion(
        [
            Outcome(True, "pass", "answer", "answer"),
            Outcome(False, "pass", "refuse", "answer"),
            Outcome(False, "error", "refuse", None),
            Outcome(True, "pass", None, "answer"),  # the people gave no label
            Outcome(True, "pass", "answer", None),  # the judge asked several questions
        ]
    )
    assert found == {"answer": {"answer": 1}, "refuse": {"answer": 1, "judge_error": 1}}


def _read(
    by: str, passed: bool, *, line: int, at: datetime = AT, label: str | None = None
) -> ReadLabel:
    return ReadLabel(
        LabelLine.of(
            case_id="kern-001",
            reply="Zes weken.",
            kind="behaviour.expected",
            nth=0,
            passed=passed,
            by=by,
            label=label,
            at=at,
        ),
        Path("labels/a.jsonl"),
        line,
    )


def test_the_majority_decides_and_a_tie_leaves_the_item_undecided() -> None:
    (item,) = gather([_read("a", True, line=1), _read("b", False, line=2)])
    assert item.verdicts == (True, False) and item.passed is None
    (item,) = gather(
        [
            _read("a", True, line=1, label="answer"),
            _read("b", False, line=2, label="refuse"),
            _read("c", True, line=3, label="answer"),
        ]
    )
    assert item.passed is True and item.label == "answer"


def test_a_persons_later_label_replaces_their_earlier_one() -> None:
    later = AT + timedelta(hours=1)
    (item,) = gather([_read("a", True, line=1, at=later), _read("a", False, line=2)])
    assert item.verdicts == (True,)  # the line further down is older: the first one counts
    (item,) = gather([_read("a", True, line=1), _read("a", False, line=2)])
    assert item.verdicts == (False,)  # the same time: the line further down counts


def _tail_above(hits: int, n: int, p: float) -> float:
    """P(X > hits) + ½ P(X = hits) for X ~ Bin(n, p), summed exactly term by term."""
    terms = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return math.fsum(terms[hits + 1 :]) + terms[hits] / 2


def test_the_mid_p_interval_solves_its_equations() -> None:
    for hits, n in [(1, 2), (9, 10), (3, 7), (32, 40), (50, 100)]:
        low, high = agreement_interval(hits, n)
        assert low < hits / n < high
        assert _tail_above(hits, n, low) == pytest.approx(0.025, abs=1e-9)
        # P(X < hits) + ½ P(X = hits) = 1 − (P(X > hits) + ½ P(X = hits))
        assert 1 - _tail_above(hits, n, high) == pytest.approx(0.025, abs=1e-9)
    # at the edges one bound is the edge and the other has a closed form
    assert agreement_interval(0, 4) == pytest.approx((0.0, 1 - 0.05**0.25))
    assert agreement_interval(4, 4) == pytest.approx((0.05**0.25, 1.0))
    assert agreement_interval(9, 10) == pytest.approx((0.596524, 0.994999), abs=1e-6)
    with pytest.raises(ValueError, match=r"hits must lie in 0\.\.n"):
        agreement_interval(3, 2)


def _kappa_coverage(prevalence: float, recall: float, n: int, sets: int) -> tuple[float, float]:
    """How often κ's interval, and the large-sample one, hold the true κ of a judge with
    pass and fail recall `recall`, over `sets` seeded label sets of `n` items in which
    people pass a share `prevalence`; label sets whose κ is undefined are left out."""
    passed, failed = prevalence, 1 - prevalence
    cells = np.array(
        [passed * recall, passed * (1 - recall), failed * (1 - recall), failed * recall]
    )
    judge_pass = cells[0] + cells[2]
    chance = prevalence * judge_pass + (1 - prevalence) * (1 - judge_pass)
    truth = (cells[0] + cells[3] - chance) / (1 - chance)
    rng = np.random.default_rng([n, round(100 * prevalence), round(100 * recall)])
    held = held_large = counted = 0
    for a, b, c, d in rng.multinomial(n, cells, size=sets):
        value, interval = kappa(int(a), int(b), int(c), int(d))
        if value is None or interval is None:
            continue
        counted += 1
        held += interval[0] <= truth <= interval[1]
        observed = (a + d) / n
        first, second = (a + b) / n, (a + c) / n
        expected = first * second + (1 - first) * (1 - second)
        half = 1.96 * math.sqrt(observed * (1 - observed) / (n * (1 - expected) ** 2))
        held_large += value - half <= truth <= value + half
    return held / counted, held_large / counted


@pytest.mark.parametrize(("prevalence", "n"), [(0.5, 5), (0.5, 10), (0.8, 5), (0.8, 10)])
def test_kappas_interval_covers_the_true_kappa_at_the_edge(prevalence: float, n: int) -> None:
    """A nearly perfect judge (both recalls .95, true κ .85-.90) on a handful of items: most
    label sets agree on every item. 1,000 label sets keep the Monte-Carlo error of a
    coverage near 0.7 points; bench/calibration.py runs the full table. The large-sample
    interval, zero-width at p_o = 1, holds the true κ in under half of them."""
    covered, covered_large = _kappa_coverage(prevalence, 0.95, n, 1000)
    assert covered >= 0.93
    assert covered_large < 0.5
