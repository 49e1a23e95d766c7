"""What decided a case: one root cause told once, counted verdicts apart from weight 0."""

from __future__ import annotations

from soev_pipeline.view.attempts import AttemptView, Text, VerdictCell, VerdictRow
from soev_pipeline.view.decided import FailedCriterion, RootCause, what_failed


def _attempt(attempt: int, cause: str | None = None) -> AttemptView:
    return AttemptView(attempt, False, 0.0, (), None, None, (), cause is None, cause)


def _row(kind: str, *statuses: str, weight: float = 1.0, gate: bool = False) -> VerdictRow:
    cells = tuple(
        VerdictCell(attempt, kind, 0, status, Text(""), None, False, ())
        for attempt, status in enumerate(statuses)
    )
    return VerdictRow(kind, 0, weight, gate, cells)


NOT_FOUND = "http_404 (HTTP 404): Not Found"


def test_an_attempt_without_a_reply_is_one_cause_with_the_criteria_it_took_down() -> None:
    attempts = [_attempt(0), _attempt(1, NOT_FOUND)]
    rows = [
        _row("run.no_failure", "pass", "fail", gate=True),
        _row("citations.required", "fail", "error", gate=True),
        _row("reply.language", "pass", "error"),
        _row("rubric.judge", "pass", "error", weight=0),
    ]
    found = what_failed(rows, attempts)
    assert found.causes == (
        RootCause(
            NOT_FOUND,
            (1,),
            ("run.no_failure", "citations.required", "reply.language", "rubric.judge"),
        ),
    )
    assert found.decided == (FailedCriterion("citations.required", True, 1.0, "fail ×1"),)
    assert found.uncounted == ()


def test_attempts_with_the_same_cause_share_one_line() -> None:
    attempts = [_attempt(0, NOT_FOUND), _attempt(1, "timeout"), _attempt(2, NOT_FOUND)]
    found = what_failed([_row("run.no_failure", "fail", "fail", "fail", gate=True)], attempts)
    assert [(c.cause, c.attempts, len(c.criteria)) for c in found.causes] == [
        (NOT_FOUND, (0, 2), 1),
        ("timeout", (1,), 1),
    ]
    assert not found.decided


def test_a_fail_of_weight_0_is_apart_and_its_error_still_decides() -> None:
    attempts = [_attempt(0), _attempt(1), _attempt(2)]
    rows = [
        _row("rubric.judge", "fail", "fail", "error", weight=0),
        _row("privacy.names", "fail", "pass", "pass", weight=0, gate=True),
        _row("nuggets.coverage", "pass", "fail", "pass", weight=2),
    ]
    found = what_failed(rows, attempts)
    assert [(f.name, f.statuses) for f in found.decided] == [
        ("rubric.judge", "error ×1"),
        ("privacy.names", "fail ×1"),
        ("nuggets.coverage", "fail ×1"),
    ]
    assert found.uncounted == (FailedCriterion("rubric.judge", False, 0, "fail ×2"),)


def test_a_case_where_nothing_failed_has_nothing_to_say() -> None:
    found = what_failed([_row("reply.language", "pass", "not_applicable")], [_attempt(0)])
    assert not found
