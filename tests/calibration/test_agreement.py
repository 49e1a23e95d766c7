"""The judge against the people, and people against each other: each formula of
docs/statistics.md#the-judge-against-people against values worked by hand (the page shows the
same work)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from soev_pipeline.calibration import (
    LabelLine,
    Outcome,
    ReadLabel,
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
    # p_o = 0, p_h = 1, p_j = 0: p_e = 0, κ = 0, and p_o(1 − p_o) = 0 leaves no width
    assert found.agreement == 0.0
    assert found.kappa == 0.0 and found.kappa_ci95 == (0.0, 0.0)
    assert found.pass_recall == 0.0


def test_perfect_agreement_is_kappa_one() -> None:
    found = agreement_of(outcomes((True, "pass", 3), (False, "fail", 2)))
    # p_o = 1, p_e = .6·.6 + .4·.4 = .52: κ = (1 − .52)/(1 − .52) = 1, no width
    assert found.agreement == 1.0
    assert found.kappa == 1.0 and found.kappa_ci95 == (1.0, 1.0)
    assert found.pass_recall == found.fail_recall == 1.0


def test_a_judge_that_always_says_pass_agrees_often_and_has_kappa_zero() -> None:
    found = agreement_of(outcomes((True, "pass", 9), (False, "pass", 1)))
    # 90 % agreement; p_e = .9·1 + .1·0 = .9, so κ = (.9 − .9)/(1 − .9) = 0;
    # half-width 1.96·sqrt(.9·.1/(10·.1²)) = 1.86, clipped to [−1, 1]
    assert found.agreement == pytest.approx(0.9)
    assert found.kappa == 0.0
    assert found.kappa_ci95 == (-1.0, 1.0)
    assert found.pass_recall == 1.0 and found.fail_recall == 0.0


def test_a_worked_table_of_forty_items() -> None:
    found = agreement_of(
        outcomes((True, "pass", 20), (True, "fail", 5), (False, "pass", 3), (False, "fail", 12))
    )
    # p_o = 32/40 = .8; p_h = 25/40, p_j = 23/40; p_e = .625·.575 + .375·.425 = .51875
    # κ = .28125/.48125 = .58442; half = 1.96·sqrt(.8·.2/(40·.48125²)) = .25758
    assert found.items == 40 and found.agreement == pytest.approx(0.8)
    assert found.kappa == pytest.approx(0.584416, abs=1e-6)
    assert found.kappa_ci95 == pytest.approx((0.326834, 0.841997), abs=1e-6)
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
    # always disagreeing, each rater half pass: p_o = 0, p_e = .5, κ = −1
    assert value == -1.0 and interval == (-1.0, -1.0)
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
