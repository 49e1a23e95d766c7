"""The attempt phase's edges (docs/runs.md#a-run-that-cannot-reach-the-assistant): the first
attempts of a run that all fail the same way before any reply stop it, archiving none of
them and cancelling those in flight; the attempts that did not run are planned once more."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import JsonValue

from soev_pipeline.core.models import Case, Evidence, Failure, Turn
from soev_pipeline.run.archive import EvidenceWriter
from soev_pipeline.run.attempts import (
    FIRST_ATTEMPTS,
    FirstAttempts,
    FirstAttemptsFailed,
    failed_before_reply,
    plan_attempts,
    plan_retries,
    run_attempts,
)
from tests.support.builders import make_case, make_evidence, make_turn, make_variant

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def failed(code: str, status: int | None = None, detail: str = "") -> Evidence:
    """Evidence of an attempt whose one turn failed with `code` (and HTTP `status`)."""
    failure = Failure(code=code, detail=detail, http_status=status)
    return make_evidence(None, turns=[Turn(input="Vraag?", failure=failure)])


def not_found() -> Evidence:
    return failed("not_found", 404, "HTTP 404: no such route")


@pytest.mark.parametrize(
    ("evidence", "reason"),
    [
        (not_found(), "HTTP 404"),
        (failed("http_401", 401), "HTTP 401"),
        (failed("unauthorized", 403), "HTTP 403"),
        (failed("http_405", 405), "HTTP 405"),
        (failed("connect_error"), "connect_error"),
        (failed("http_429", 429), None),  # did not run: retried, never a stop
        (failed("service_unavailable", 503), None),
        (failed("http_500", 500), None),
        (failed("timeout"), None),  # the assistant's behaviour
        (failed("model_error"), None),  # a `failure` event of the assistant
        (make_evidence("Zes weken."), None),
    ],
)
def test_what_fails_before_any_reply(evidence: Evidence, reason: str | None) -> None:
    assert failed_before_reply(evidence) == reason


def test_a_reply_anywhere_is_a_reply() -> None:
    """The base conversation failed, but a variant's thread answered: the route works."""
    variant = make_variant("v1")
    evidence = not_found().model_copy(update={"variants": (variant,)})
    assert failed_before_reply(evidence) is None
    # a later turn that failed after the first one answered is not "before any reply"
    turns = [make_turn("Ja."), Turn(input="En?", failure=Failure(code="x", http_status=404))]
    assert failed_before_reply(make_evidence(None, turns=turns)) is None


def test_the_window_stops_at_its_last_attempt_and_releases_nothing() -> None:
    watch = FirstAttempts(3)
    assert watch.take(not_found()) == [] and watch.take(not_found()) == []
    with pytest.raises(FirstAttemptsFailed) as stopped:
        watch.take(not_found())
    assert (stopped.value.reason, stopped.value.attempts) == ("HTTP 404", 3)
    assert stopped.value.detail == "HTTP 404: no such route"


def test_another_outcome_releases_the_held_attempts_and_settles_the_window() -> None:
    watch = FirstAttempts(3)
    held = [not_found(), not_found()]
    assert watch.take(held[0]) == [] and watch.take(held[1]) == []
    other = failed("http_401", 401)  # the same way? no: another status
    assert watch.take(other) == [*held, other]
    assert watch.settled and watch.held == []
    # from now on, every attempt goes straight through, 404 or not
    later = not_found()
    assert watch.take(later) == [later] and watch.take(later) == [later]
    replied = FirstAttempts(3)
    answer = make_evidence("Zes weken.")
    assert replied.take(answer) == [answer] and replied.settled


def test_an_empty_window_watches_nothing() -> None:
    watch = FirstAttempts(0)
    evidence = not_found()
    assert watch.settled and watch.take(evidence) == [evidence]


class Arm:
    """An arm whose attempts answer with `answer(case_id, attempt)`; attempts of the cases
    in `slow` wait until cancelled, and say so in `cancelled`."""

    def __init__(
        self, answer: Callable[[str, int], Evidence], slow: frozenset[str] = frozenset()
    ) -> None:
        self.answer = answer
        self.slow = slow
        self.started: list[tuple[str, int]] = []
        self.cancelled: list[tuple[str, int]] = []

    async def attempt(
        self, case: Case, *, attempt: int, fields: Mapping[str, JsonValue]
    ) -> Evidence:
        self.started.append((case.id, attempt))
        if case.id in self.slow:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.append((case.id, attempt))
                raise
        await asyncio.sleep(0)
        found = self.answer(case.id, attempt)
        return found.model_copy(update={"case_id": case.id, "attempt": attempt})


def cases(count: int) -> list[Case]:
    return [make_case(id=f"kern-{n:03d}") for n in range(count)]


def lines(path: Path) -> list[Evidence]:
    if not path.exists():
        return []
    return [Evidence.model_validate_json(line) for line in path.read_bytes().splitlines()]


def run(
    plan: list[tuple[Case, int]], arm: Arm, path: Path, *, concurrency: int, first: int
) -> None:
    async def go() -> None:
        with EvidenceWriter(path) as writer:
            await run_attempts(plan, arm, writer, messages={}, concurrency=concurrency, first=first)

    asyncio.run(go())


def test_twenty_404s_stop_the_run_and_cancel_the_attempts_in_flight(tmp_path: Path) -> None:
    """34 attempts at a wrong route, 8 at a time, those of two cases hanging: the twentieth
    404 to finish stops the phase; the hanging ones are cancelled, nothing is archived."""
    path = tmp_path / "evidence.jsonl"
    arm = Arm(lambda case_id, attempt: not_found(), slow=frozenset({"kern-001", "kern-002"}))
    plan = plan_attempts(cases(17), 2)
    with pytest.raises(FirstAttemptsFailed) as stopped:
        run(plan, arm, path, concurrency=8, first=FIRST_ATTEMPTS)
    assert (stopped.value.reason, stopped.value.attempts) == ("HTTP 404", FIRST_ATTEMPTS)
    assert lines(path) == []
    hanging = {started for started in arm.started if started[0] in arm.slow}
    assert ("kern-001", 0) in hanging and set(arm.cancelled) == hanging
    assert len(arm.started) < len(plan)  # the rest never started


def test_a_run_with_fewer_attempts_than_the_window_stops_when_they_all_fail(
    tmp_path: Path,
) -> None:
    path = tmp_path / "evidence.jsonl"
    arm = Arm(lambda case_id, attempt: failed("connect_error", detail="refused"))
    with pytest.raises(FirstAttemptsFailed) as stopped:
        run(plan_attempts(cases(3), 1), arm, path, concurrency=2, first=FIRST_ATTEMPTS)
    assert (stopped.value.reason, stopped.value.attempts) == ("connect_error", 3)
    assert lines(path) == []


def test_one_answer_among_the_first_attempts_lets_the_run_go_on(tmp_path: Path) -> None:
    """A case the assistant does not know (404 on its own terms) is not a wrong route when
    another case is answered: every attempt is archived, once."""

    def answer(case_id: str, attempt: int) -> Evidence:
        return make_evidence("Zes weken.") if case_id == "kern-007" else not_found()

    path = tmp_path / "evidence.jsonl"
    arm = Arm(answer)
    plan = plan_attempts(cases(25), 1)
    run(plan, arm, path, concurrency=1, first=FIRST_ATTEMPTS)
    archived = [(e.case_id, e.attempt) for e in lines(path)]
    assert sorted(archived) == sorted((case.id, n) for case, n in plan)


def test_an_interruption_while_watching_keeps_the_finished_attempts(tmp_path: Path) -> None:
    """Ctrl-C after five 404s and before the window is full: those five finished, and are
    archived as every finished attempt is; the one in flight is not."""
    path = tmp_path / "evidence.jsonl"
    arm = Arm(lambda case_id, attempt: not_found(), slow=frozenset({"kern-005"}))

    async def go() -> None:
        with EvidenceWriter(path) as writer:
            task = asyncio.create_task(
                run_attempts(
                    plan_attempts(cases(10), 1),
                    arm,
                    writer,
                    messages={},
                    concurrency=1,
                    first=FIRST_ATTEMPTS,
                )
            )
            while ("kern-005", 0) not in arm.started:
                await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())
    assert [e.case_id for e in lines(path)] == [f"kern-{n:03d}" for n in range(5)]
    assert arm.cancelled == [("kern-005", 0)]


def test_the_attempts_that_did_not_run_are_planned_again_in_the_order_of_a_run() -> None:
    selected = cases(3)
    unrun = {("kern-002", 0), ("kern-000", 1), ("kern-001", 0), ("gone-001", 0)}
    again = [(case.id, attempt) for case, attempt in plan_retries(selected, 2, unrun)]
    assert again == [("kern-001", 0), ("kern-002", 0), ("kern-000", 1)]
