"""The labelling queue's rule (docs/view.md#the-labelling-queue): per criterion, stratified
by the judge's verdict, the widest recall interval first; ties to a third reviewer; nothing
a reviewer labelled, nothing decided, nothing calibration would leave out."""

from __future__ import annotations

from pathlib import Path

from soev_pipeline.calibration import (
    DEFAULT_MIN_ITEMS,
    Candidate,
    LabelLine,
    ReadLabel,
    gather,
    next_to_label,
    why_not_labelled,
)
from soev_pipeline.calibration.agreement import NARROW_RECALL, items_for
from soev_pipeline.core.canonical import sha256_text
from tests.calibration.conftest import AT
from tests.support.builders import make_case


def _candidate(
    case_id: str, *, judge_passed: bool, kind: str = "behaviour.expected", attempt: int = 0
) -> Candidate:
    return Candidate(case_id, attempt, sha256_text(f"reply of {case_id}"), kind, 0, judge_passed)


def _label(case_id: str, by: str, passed: bool, kind: str = "behaviour.expected") -> ReadLabel:
    line = LabelLine.of(
        case_id=case_id, reply=f"reply of {case_id}", kind=kind, nth=0, passed=passed, by=by, at=AT
    )
    return ReadLabel(line, Path("labels/labels.jsonl"), 1)


def test_both_strata_get_items_the_widest_interval_first() -> None:
    judged_pass = [_candidate(f"p-{n}", judge_passed=True) for n in range(6)]
    judged_fail = [_candidate(f"f-{n}", judge_passed=False) for n in range(6)]
    candidates = judged_pass + judged_fail

    first = next_to_label(candidates, [], "anna")
    assert first.why == "widest" and first.next is not None
    assert first.next.judge_passed is False  # equal widths: the judge's fails first

    # three replies the judge failed, and the people failed too: the fail recall is
    # measured, the pass recall not at all, so its stratum's interval is the widest now
    labels = [_label(c.case_id, "anna", False) for c in judged_fail[:3]]
    then = next_to_label(candidates, gather(labels), "anna")
    assert then.next is not None and then.next.judge_passed is True
    assert then.stratum is not None and then.stratum.width == 1.0
    fail = next(s for s in then.strata if not s.judge_passed)
    assert fail.labelled == 3 and fail.waiting == 3 and fail.width < 1.0


def test_within_a_stratum_the_order_is_fixed_and_skips_and_labels_move_it_on() -> None:
    candidates = [_candidate(f"c-{n}", judge_passed=True) for n in range(4)]
    first = next_to_label(candidates, [], "anna").next
    assert first is not None
    assert first == next_to_label(list(reversed(candidates)), [], "anna").next
    skipped = next_to_label(candidates, [], "anna", frozenset({first.item_id})).next
    assert skipped is not None and skipped != first
    labelled = next_to_label(candidates, gather([_label(first.case_id, "anna", True)]), "anna")
    assert labelled.next == skipped


def test_an_item_someone_decided_is_not_offered_and_a_tie_goes_to_a_third_reviewer() -> None:
    candidates = [_candidate("decided", judge_passed=True), _candidate("split", judge_passed=True)]
    labels = gather(
        [
            _label("decided", "bert", True),
            _label("split", "bert", True),
            _label("split", "carla", False),
        ]
    )
    third = next_to_label(candidates, labels, "anna")
    assert third.next is not None and third.next.case_id == "split" and third.why == "tie"
    assert third.labels is not None and {r.label.by for r in third.labels.labels} == {
        "bert",
        "carla",
    }
    for labelled_it in ("bert", "carla"):
        done = next_to_label(candidates, labels, labelled_it)
        assert done.next is None and done.why == "done"


def test_the_same_reply_in_two_attempts_is_one_item() -> None:
    twice = [_candidate("c", judge_passed=True, attempt=n) for n in range(2)]
    found = next_to_label(twice, [], "anna")
    assert found.next is not None and found.next.attempt == 0
    assert sum(s.waiting for s in found.strata) == 1
    after = next_to_label(twice, gather([_label("c", "anna", True)]), "anna")
    assert after.next is None


def test_progress_asks_for_what_calibrate_asks() -> None:
    candidates = [_candidate(f"c-{n}", judge_passed=n % 2 == 0) for n in range(10)]
    assert next_to_label(candidates, [], "anna").progress["behaviour.expected"].target == (
        DEFAULT_MIN_ITEMS
    )
    # ten replies people passed, of which the judge passed five: the pass recall is 50 %
    # on ten items, an interval wider than calibrate accepts, so it names more items
    labels = gather(_label(f"c-{n}", "anna", True) for n in range(10))
    progress = next_to_label(candidates, labels, "anna").progress["behaviour.expected"]
    assert progress.items == 10
    assert progress.target == items_for(0.5, NARROW_RECALL) > DEFAULT_MIN_ITEMS


def test_only_verdicts_calibration_counts_take_a_label() -> None:
    case = make_case(criteria=[{"kind": "behaviour.expected"}])
    counts = {"judged": True, "has_reply": True}
    assert why_not_labelled(case, "behaviour.expected", 0, "fail", **counts) is None
    assert why_not_labelled(case, "behaviour.expected", 0, "error", **counts) is None
    test_case = make_case(split="test", criteria=[{"kind": "behaviour.expected"}])
    assert why_not_labelled(test_case, "behaviour.expected", 0, "fail", **counts) == "not_dev"
    assert why_not_labelled(None, "behaviour.expected", 0, "fail", **counts) == "not_dev"
    assert (
        why_not_labelled(case, "behaviour.expected", 0, "not_applicable", **counts)
        == "not_applicable"
    )
    assert (
        why_not_labelled(case, "behaviour.expected", 0, "fail", judged=False, has_reply=True)
        == "not_judged"
    )
    assert (
        why_not_labelled(case, "behaviour.expected", 0, "fail", judged=True, has_reply=False)
        == "no_reply"
    )
    assert why_not_labelled(case, "compare.equivalent", 0, "fail", **counts) == "needs_variants"
    assert why_not_labelled(case, "behaviour.expected", 1, "fail", **counts) == "no_criterion"
