"""SoevThreadArm when the system misbehaves: failures recorded, retries, timeouts, cut streams,
deletes, cancel. Over the MockTransport, and over a real socket where the connection itself
misbehaves (a cut, a stall)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import pytest

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.core.models import Evidence
from tests.support.builders import FAST_RETRY, conversation, system_config
from tests.support.clock import on_virtual_clock
from tests.support.thread_api import (
    CUT,
    HANG,
    NOWHERE,
    FakeThreadAPI,
    Reply,
    Response,
    Stream,
    frame,
    problem,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def soev() -> FakeThreadAPI:
    return FakeThreadAPI()


async def run(soev: FakeThreadAPI, *turns: str, socket: bool = False, **system: Any) -> Evidence:
    """An attempt of `turns`, over `soev` on a socket of its own when `socket` says so."""
    with contextlib.ExitStack() as stack:
        if socket:
            stack.enter_context(soev)
        config = system_config(soev.url if socket else NOWHERE, **system)
        transport = None if socket else soev.transport()
        async with create_http_client(config, transport=transport) as http:
            arm = SoevThreadArm(http, config, retry=FAST_RETRY)
            return await arm.attempt(conversation(*turns), attempt=0, fields={})


def answer(content: str) -> list[bytes]:
    return Reply(content, usage=None).frames()


def failure_of(evidence: Any) -> tuple[str, str]:
    failure = evidence.turns[-1].failure
    assert failure is not None
    return failure.code, failure.detail


async def test_thread_active_is_recorded_and_not_retried(soev: FakeThreadAPI) -> None:
    soev.queue("input", problem(409, "thread_active", "a turn is running"))
    evidence = await run(soev, "Een", "Twee", "Drie")

    assert failure_of(evidence) == ("thread_active", "HTTP 409: a turn is running")
    assert [turn.input for turn in evidence.turns] == ["Een", "Twee"]
    assert evidence.turns[0].failure is None
    assert (evidence.reply, evidence.citations) == (None, ())
    assert evidence.failure is not None
    assert len(soev.routed("input")) == 1
    assert soev.deleted == ["thread-1"]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (("problem", 400, "invalid_field"), "invalid_field"),
        (("problem", 401, None), "http_401"),
        (("problem", 404, "not_found"), "not_found"),
        (("problem", 500, None), "http_500"),
        (("plain", 500, b"<html>oops</html>"), "http_500"),
    ],
)
async def test_client_and_server_errors_are_not_retried(
    soev: FakeThreadAPI, reply: tuple[str, int, Any], code: str
) -> None:
    shape, status, extra = reply
    response = problem(status, extra) if shape == "problem" else Response(status, extra)
    soev.queue("open", response)
    evidence = await run(soev, "Een", "Twee")

    assert failure_of(evidence)[0] == code
    assert failure_of(evidence)[1].startswith(f"HTTP {status}")
    assert evidence.failure is not None and evidence.failure.http_status == status
    assert len(evidence.turns) == 1
    assert len(soev.requests) == 1  # no retry, no second turn, no thread to delete


@pytest.mark.parametrize("status", [429, 502, 503, 504])
async def test_a_busy_status_is_retried_and_then_succeeds(soev: FakeThreadAPI, status: int) -> None:
    soev.queue("open", problem(status, "busy", Retry_After="0"), Response(502))
    evidence = await run(soev, "Een")
    assert evidence.reply == "antwoord 1 op Een"
    assert evidence.failure is None
    assert len(soev.routed("open")) == 3
    assert soev.deleted == ["thread-1"]


async def test_retries_stop_after_max_retries(soev: FakeThreadAPI) -> None:
    soev.queue("open", *[problem(503, "service_unavailable")] * 5)
    evidence = await run(soev, "Een", max_retries=3)
    assert failure_of(evidence)[0] == "service_unavailable"
    # the status is kept beside the body's own code: this attempt did not run (run.unrun)
    assert evidence.failure is not None and evidence.failure.http_status == 503
    assert len(soev.routed("open")) == 4


def test_a_429_waits_as_long_as_retry_after_says(soev: FakeThreadAPI) -> None:
    soev.queue("open", problem(429, "rate_limited", Retry_After="1"))
    evidence = on_virtual_clock(run(soev, "Een"))
    first, second = soev.routed("open")
    assert evidence.reply == "antwoord 1 op Een"
    assert second.at - first.at == pytest.approx(1.0)
    assert evidence.turns[0].duration_s == pytest.approx(1.0)


def test_a_retry_that_would_pass_the_turn_deadline_is_not_tried(soev: FakeThreadAPI) -> None:
    soev.queue("open", problem(429, "rate_limited", Retry_After="30"))
    evidence = on_virtual_clock(run(soev, "Een", timeout_s=2))
    assert failure_of(evidence)[0] == "rate_limited"
    assert len(soev.routed("open")) == 1
    assert evidence.turns[0].duration_s == 0.0  # it did not wait


async def test_a_retry_after_the_stream_began_never_happens(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("model_output", {"content": "Half"}), CUT]
    evidence = await run(soev, "Een", socket=True)
    code, detail = failure_of(evidence)
    assert code == "stream_ended"
    assert "mid-stream" in detail
    assert len(soev.routed("open")) == 1
    assert soev.deleted == ["thread-1"]


async def test_a_stream_cut_in_the_middle_of_a_frame(soev: FakeThreadAPI) -> None:
    whole = frame("model_output", {"content": "Zes weken."})
    soev.script = lambda text, history: [whole[:20], CUT]
    evidence = await run(soev, "Een", socket=True)
    assert failure_of(evidence)[0] == "stream_ended"

    # Without chunked encoding the cut looks like a normal end of the body.
    soev.queue("open", Stream([whole[:20], CUT], 201, {"X-Soev-Thread-Id": "t-x"},
                                  chunked=False))  # fmt: skip
    evidence = await run(soev, "Een", socket=True)
    assert failure_of(evidence) == (
        "stream_ended",
        "the stream ended in the middle of a frame without a status event",
    )


async def test_a_stream_that_ends_without_status(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: answer("Bijna.")[:-1]
    evidence = await run(soev, "Een")
    assert failure_of(evidence) == ("stream_ended", "the stream ended without a status event")
    assert evidence.reply is None
    assert soev.deleted == ["thread-1"]


@pytest.mark.parametrize("event", ["error", "failure"])
async def test_error_and_failure_events_fail_the_turn_with_their_code(
    soev: FakeThreadAPI, event: str
) -> None:
    def script(text: str, history: list[str]) -> list[Any]:
        if not history:
            return answer("Eerst.")
        return [
            frame("model_output", {"content": "Bijna."}),
            frame(event, {"code": "model_unavailable", "detail": "het model is weg"}),
            frame("status", {"state": "idle"}),
        ]

    soev.script = script
    evidence = await run(soev, "Een", "Twee", "Drie")
    assert failure_of(evidence) == ("model_unavailable", f"{event} event: het model is weg")
    assert len(evidence.turns) == 2
    assert evidence.turns[0].reply == "Eerst."
    assert (evidence.reply, evidence.citations) == (None, ())
    assert soev.deleted == ["thread-1"]


async def test_an_error_event_without_a_code_takes_its_type(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("error", {})]
    evidence = await run(soev, "Een")
    assert failure_of(evidence) == ("error", "")


@pytest.mark.parametrize(
    ("frames", "detail"),
    [
        ([b"event: model_output\ndata: {not json\n\n"], "its data is not JSON"),
        ([b"event: status\ndata: [1]\n\n"], "not a JSON object"),
        ([b'event: model_output\ndata: {"citations": []}\n\n'], "no content"),
        ([b'event: status\ndata: {"phase": "idle"}\n\n'], "no state"),
        ([b'event: model_output\ndata: {"content": "x", "citations": "e1"}\n\n'], "citations"),
        ([b'event: model_output\ndata: {"content": "x", "usage": {"prompt_tokens": 1}}\n\n'],
         "usage"),
        ([b'event: tool_output\ndata: {"elements": [{"ref": "a"}]}\n\n'], "with an id"),
    ],
)  # fmt: skip
async def test_malformed_frames_fail_the_turn(
    soev: FakeThreadAPI, frames: list[bytes], detail: str
) -> None:
    soev.script = lambda text, history: [*frames, *answer("Niet gelezen.")]
    evidence = await run(soev, "Een")
    code, text = failure_of(evidence)
    assert code == "malformed_frame"
    assert detail in text


async def test_frames_that_do_not_matter_are_not_decoded(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        b"event: delta\ndata: {half\n\n",
        b": a comment\n\n",
        frame("request", {"kind": "approval"}),
        *answer("Goed."),
    ]
    evidence = await run(soev, "Een")
    assert (evidence.reply, evidence.failure) == ("Goed.", None)


async def test_an_orphaned_thread_fails_the_turn(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("status", {"state": "orphaned"})]
    evidence = await run(soev, "Een")
    assert failure_of(evidence)[0] == "orphaned"


async def test_a_missing_thread_id_fails_the_first_turn(soev: FakeThreadAPI) -> None:
    soev.queue("open", Stream(answer("Ja."), 201))
    evidence = await run(soev, "Een", "Twee")
    assert failure_of(evidence)[0] == "missing_thread_id"
    assert len(evidence.turns) == 1
    assert soev.routed("delete") == []


async def test_a_turn_that_takes_too_long_times_out(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("delta", {"text": "Ik denk"}), HANG]
    evidence = await run(soev, "Een", "Twee", socket=True, timeout_s=0.3)
    code, detail = failure_of(evidence)
    assert (code, detail) == ("timeout", "the turn took longer than 0.3 s")
    assert len(evidence.turns) == 1
    assert soev.deleted == ["thread-1"]


def test_a_turn_that_times_out_ends_at_its_deadline(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("delta", {"text": "Ik denk"}), HANG]
    evidence = on_virtual_clock(run(soev, "Een", timeout_s=0.3))
    assert failure_of(evidence)[0] == "timeout"
    assert evidence.turns[0].duration_s == pytest.approx(0.3)  # not after the hang


async def test_a_server_that_never_answers_times_out(soev: FakeThreadAPI) -> None:
    soev.queue("open", Response(201, delay_s=10))
    evidence = await run(soev, "Een", socket=True, timeout_s=0.3, max_retries=0)
    assert failure_of(evidence)[0] == "timeout"


async def test_a_refused_connection_is_retried_and_recorded() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = system_config(f"http://127.0.0.1:{port}/", max_retries=2)
    sent: list[str] = []

    async def count(request: Any) -> None:
        sent.append(request.url.path)

    async with create_http_client(config) as http:
        http.event_hooks["request"].append(count)
        evidence = await SoevThreadArm(http, config, retry=FAST_RETRY).attempt(
            conversation("Een"), attempt=0, fields={}
        )
    code, detail = failure_of(evidence)
    assert code == "connect_error"
    assert detail.startswith("cannot connect to the system: ")  # refused, not timed out
    assert sent == ["/v1/chat/threads"] * 3


DELETES = {"problem": problem(500), "hang": Stream([HANG]), "gone": problem(404, "not_found")}


@pytest.mark.parametrize("delete", sorted(DELETES))
async def test_a_failed_delete_never_fails_the_attempt(soev: FakeThreadAPI, delete: str) -> None:
    soev.queue("delete", DELETES[delete])
    evidence = await run(soev, "Een", socket=True, timeout_s=0.4)
    assert (evidence.reply, evidence.failure) == ("antwoord 1 op Een", None)
    assert len(soev.routed("delete")) == 1


def test_cancelling_an_attempt_still_deletes_its_threads(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [frame("delta", {"text": "Ik denk"}), HANG]
    config = system_config(NOWHERE, timeout_s=30)
    case = conversation("Een", variants=(("Ander",),))

    async def cancel_once_streaming() -> float:
        """Cancel the attempt once both its streams are open; the seconds it then took."""
        async with create_http_client(config, transport=soev.transport()) as http:
            arm = SoevThreadArm(http, config)
            task = asyncio.create_task(arm.attempt(case, attempt=0, fields={}))
            while soev.open_streams < 2:
                await asyncio.sleep(0.01)
            started = asyncio.get_running_loop().time()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return asyncio.get_running_loop().time() - started

    assert on_virtual_clock(cancel_once_streaming()) == 0.0  # no wait for the turn's deadline
    assert sorted(soev.deleted) == ["thread-1", "thread-2"]
