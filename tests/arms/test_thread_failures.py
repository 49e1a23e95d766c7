"""SoevThreadArm when the system misbehaves: failures recorded, retries, deletes, cancel."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from soev_pipeline.arms import SoevThreadArm, create_http_client

pytestmark = pytest.mark.anyio


async def run(kit: Any, soev: Any, *turns: str, **system: Any) -> Any:
    config = kit.system_for(soev.server.url, **system)
    async with create_http_client(config) as http:
        arm = SoevThreadArm(http, config, retry=kit.FAST)
        return await arm.attempt(kit.make_case(*turns), attempt=0, fields={})


def failure_of(evidence: Any) -> tuple[str, str]:
    failure = evidence.turns[-1].failure
    assert failure is not None
    return failure.code, failure.detail


async def test_thread_active_is_recorded_and_not_retried(kit: Any, soev: Any) -> None:
    soev.queue("input", kit.problem(409, "thread_active", "a turn is running"))
    evidence = await run(kit, soev, "Een", "Twee", "Drie")

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
    kit: Any, soev: Any, reply: tuple[str, int, Any], code: str
) -> None:
    shape, status, extra = reply
    response = kit.problem(status, extra) if shape == "problem" else kit.Reply(status, extra)
    soev.queue("open", response)
    evidence = await run(kit, soev, "Een", "Twee")

    assert failure_of(evidence)[0] == code
    assert failure_of(evidence)[1].startswith(f"HTTP {status}")
    assert len(evidence.turns) == 1
    assert len(soev.requests) == 1  # no retry, no second turn, no thread to delete


async def test_a_503_is_retried_and_then_succeeds(kit: Any, soev: Any) -> None:
    soev.queue("open", kit.problem(503, "service_unavailable"), kit.Reply(502))
    evidence = await run(kit, soev, "Een")
    assert evidence.reply == "antwoord 1 op Een"
    assert evidence.failure is None
    assert len(soev.routed("open")) == 3
    assert soev.deleted == ["thread-1"]


async def test_retries_stop_after_max_retries(kit: Any, soev: Any) -> None:
    soev.queue("open", *[kit.problem(503, "service_unavailable")] * 5)
    evidence = await run(kit, soev, "Een", max_retries=3)
    assert failure_of(evidence)[0] == "service_unavailable"
    assert len(soev.routed("open")) == 4


async def test_a_429_waits_as_long_as_retry_after_says(kit: Any, soev: Any) -> None:
    soev.queue("open", kit.problem(429, "rate_limited", Retry_After="1"))
    evidence = await run(kit, soev, "Een")
    first, second = soev.routed("open")
    assert evidence.reply == "antwoord 1 op Een"
    assert 0.95 <= second.at - first.at < 2.0
    assert evidence.turns[0].duration_s >= 0.95


async def test_a_retry_that_would_pass_the_turn_deadline_is_not_tried(kit: Any, soev: Any) -> None:
    soev.queue("open", kit.problem(429, "rate_limited", Retry_After="30"))
    evidence = await run(kit, soev, "Een", timeout_s=2)
    assert failure_of(evidence)[0] == "rate_limited"
    assert len(soev.routed("open")) == 1
    assert evidence.turns[0].duration_s < 1.0


async def test_a_retry_after_the_stream_began_never_happens(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [kit.frame("model_output", {"content": "Half"}), kit.CUT]
    evidence = await run(kit, soev, "Een")
    code, detail = failure_of(evidence)
    assert code == "stream_ended"
    assert "mid-stream" in detail
    assert len(soev.routed("open")) == 1
    assert soev.deleted == ["thread-1"]


async def test_a_stream_cut_in_the_middle_of_a_frame(kit: Any, soev: Any) -> None:
    whole = kit.frame("model_output", {"content": "Zes weken."})
    soev.script = lambda thread, text: [whole[:20], kit.CUT]
    evidence = await run(kit, soev, "Een")
    assert failure_of(evidence)[0] == "stream_ended"

    # Without chunked encoding the cut looks like a normal end of the body.
    soev.queue("open", kit.Stream([whole[:20], kit.CUT], 201, {"X-Soev-Thread-Id": "t-x"},
                                  chunked=False))  # fmt: skip
    evidence = await run(kit, soev, "Een")
    assert failure_of(evidence) == (
        "stream_ended",
        "the stream ended in the middle of a frame without a status event",
    )


async def test_a_stream_that_ends_without_status(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: kit.answer("Bijna.")[:-1]
    evidence = await run(kit, soev, "Een")
    assert failure_of(evidence) == ("stream_ended", "the stream ended without a status event")
    assert evidence.reply is None
    assert soev.deleted == ["thread-1"]


@pytest.mark.parametrize("event", ["error", "failure"])
async def test_error_and_failure_events_fail_the_turn_with_their_code(
    kit: Any, soev: Any, event: str
) -> None:
    def script(thread: Any, text: str) -> list[Any]:
        if len(thread.texts) == 1:
            return kit.answer("Eerst.")
        return [
            kit.frame("model_output", {"content": "Bijna."}),
            kit.frame(event, {"code": "model_unavailable", "detail": "het model is weg"}),
            kit.frame("status", {"state": "idle"}),
        ]

    soev.script = script
    evidence = await run(kit, soev, "Een", "Twee", "Drie")
    assert failure_of(evidence) == ("model_unavailable", f"{event} event: het model is weg")
    assert len(evidence.turns) == 2
    assert evidence.turns[0].reply == "Eerst."
    assert (evidence.reply, evidence.citations) == (None, ())
    assert soev.deleted == ["thread-1"]


async def test_an_error_event_without_a_code_takes_its_type(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [kit.frame("error", {})]
    evidence = await run(kit, soev, "Een")
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
    kit: Any, soev: Any, frames: list[bytes], detail: str
) -> None:
    soev.script = lambda thread, text: [*frames, *kit.answer("Niet gelezen.")]
    evidence = await run(kit, soev, "Een")
    code, text = failure_of(evidence)
    assert code == "malformed_frame"
    assert detail in text


async def test_frames_that_do_not_matter_are_not_decoded(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [
        b"event: delta\ndata: {half\n\n",
        b": a comment\n\n",
        kit.frame("request", {"kind": "approval"}),
        *kit.answer("Goed."),
    ]
    evidence = await run(kit, soev, "Een")
    assert (evidence.reply, evidence.failure) == ("Goed.", None)


async def test_an_orphaned_thread_fails_the_turn(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [kit.frame("status", {"state": "orphaned"})]
    evidence = await run(kit, soev, "Een")
    assert failure_of(evidence)[0] == "orphaned"


async def test_a_missing_thread_id_fails_the_first_turn(kit: Any, soev: Any) -> None:
    soev.queue("open", kit.Stream(kit.answer("Ja."), 201))
    evidence = await run(kit, soev, "Een", "Twee")
    assert failure_of(evidence)[0] == "missing_thread_id"
    assert len(evidence.turns) == 1
    assert soev.routed("delete") == []


async def test_a_turn_that_takes_too_long_times_out(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [kit.frame("delta", {"text": "Ik denk"}), kit.HANG]
    evidence = await run(kit, soev, "Een", "Twee", timeout_s=0.3)
    code, detail = failure_of(evidence)
    assert (code, detail) == ("timeout", "the turn took longer than 0.3 s")
    assert 0.3 <= evidence.turns[0].duration_s < 1.0
    assert len(evidence.turns) == 1
    assert soev.deleted == ["thread-1"]


async def test_a_server_that_never_answers_times_out(kit: Any, soev: Any) -> None:
    async def silent(request: Any) -> Any:
        await asyncio.sleep(10)

    soev.server.handler = silent
    evidence = await run(kit, soev, "Een", timeout_s=0.3, max_retries=0)
    assert failure_of(evidence)[0] == "timeout"


async def test_a_refused_connection_is_retried_and_recorded(kit: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = kit.system_for(f"http://127.0.0.1:{port}/", max_retries=2)
    sent: list[str] = []

    async def count(request: Any) -> None:
        sent.append(request.url.path)

    started = asyncio.get_running_loop().time()
    async with create_http_client(config) as http:
        http.event_hooks["request"].append(count)
        evidence = await SoevThreadArm(http, config, retry=kit.FAST).attempt(
            kit.make_case("Een"), attempt=0, fields={}
        )
    assert failure_of(evidence)[0] == "connect_error"
    assert sent == ["/v1/chat/threads"] * 3
    assert asyncio.get_running_loop().time() - started < 2.0


@pytest.mark.parametrize("delete", ["problem", "hang"])
async def test_a_failed_delete_never_fails_the_attempt(kit: Any, soev: Any, delete: str) -> None:
    response = kit.problem(500) if delete == "problem" else kit.Stream([kit.HANG])
    soev.queue("delete", response)
    evidence = await run(kit, soev, "Een", timeout_s=0.4)
    assert (evidence.reply, evidence.failure) == ("antwoord 1 op Een", None)
    assert len(soev.routed("delete")) == 1


async def test_cancelling_an_attempt_still_deletes_its_threads(kit: Any, soev: Any) -> None:
    soev.script = lambda thread, text: [kit.frame("delta", {"text": "Ik denk"}), kit.HANG]
    config = kit.system_for(soev.server.url, timeout_s=30)
    case = kit.make_case("Een", variants=(("Ander",),))
    async with create_http_client(config) as http:
        arm = SoevThreadArm(http, config)
        task = asyncio.create_task(arm.attempt(case, attempt=0, fields={}))
        while soev.server.open_streams < 2:
            await asyncio.sleep(0.01)
        started = asyncio.get_running_loop().time()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.get_running_loop().time() - started < 1.0
    assert sorted(soev.deleted) == ["thread-1", "thread-2"]
