"""The reference server's latency, failures, a turn in progress, and many threads at once:
black-box tests of the reference assistant, end to end."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from soev_pipeline.reference import ReferenceServer
from tests.reference.wire import SSE, THREADS, body, parse_frames

pytestmark = pytest.mark.e2e

QUESTION = "Binnen welke termijn moet ik bezwaar maken?"


def test_a_follow_up_while_a_turn_runs_gets_409_thread_active() -> None:
    with (
        ReferenceServer(latency_s=0.6) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
        httpx.Client(base_url=server.url, timeout=10) as other,
        client.stream("POST", THREADS, json=body(QUESTION), headers=SSE) as stream,
    ):
        thread_id = stream.headers["x-soev-thread-id"]
        lines = stream.iter_lines()
        assert next(lines) == "id: 1"
        busy = other.post(f"{THREADS}/{thread_id}/inputs", json={"input": {"text": "En dan?"}})
        rest = "\n".join(lines)
        after = other.post(
            f"{THREADS}/{thread_id}/inputs", json={"input": {"text": "En dan?"}}, headers=SSE
        )

    assert busy.status_code == 409
    assert busy.headers["content-type"] == "application/problem+json"
    assert busy.json()["code"] == "thread_active"
    assert '"state":"idle"' in rest
    assert after.status_code == 200


def test_latency_is_spread_over_the_stream() -> None:
    with (
        ReferenceServer(latency_s=0.3) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        started = time.perf_counter()
        seen: dict[str, float] = {}
        with client.stream("POST", THREADS, json=body(QUESTION), headers=SSE) as stream:
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    seen.setdefault(line.removeprefix("event: "), time.perf_counter() - started)

    assert seen["tool_output"] - seen["input"] >= 0.14
    assert seen["model_output"] - seen["tool_output"] >= 0.14
    assert 0.29 <= seen["status"] - seen["input"] < 1.5


def test_failure_rate_one_fails_every_turn_before_or_inside_the_stream() -> None:
    with (
        ReferenceServer(failure_rate=1.0, seed=3) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        responses = [client.post(THREADS, json=body(QUESTION), headers=SSE) for _ in range(40)]

    unavailable = [r for r in responses if r.status_code == 503]
    streamed = [r for r in responses if r.status_code == 201]
    assert len(unavailable) + len(streamed) == 40
    assert unavailable
    assert streamed
    assert {r.json()["code"] for r in unavailable} == {"service_unavailable"}
    for response in streamed:
        events = [frame.event for frame in parse_frames(response.text)]
        assert events[-2:] == ["failure", "status"]
        assert "model_output" not in events
    assert server.counters.failures == 40
    assert server.counters.threads_opened == len(streamed)


def _outcomes(seed: int, rate: float, count: int) -> list[int]:
    with (
        ReferenceServer(failure_rate=rate, seed=seed) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        outcomes = []
        for _ in range(count):
            response = client.post(THREADS, json=body(QUESTION), headers=SSE)
            failed = response.status_code != 201 or "event: failure" in response.text
            outcomes.append(int(failed))
    return outcomes


def test_failures_follow_the_rate_and_repeat_with_the_seed() -> None:
    first = _outcomes(seed=7, rate=0.3, count=100)
    again = _outcomes(seed=7, rate=0.3, count=100)
    other = _outcomes(seed=8, rate=0.3, count=100)

    assert first == again
    assert first != other
    assert 15 <= sum(first) <= 45


@pytest.mark.parametrize(("latency_s", "failure_rate"), [(-0.1, 0.0), (0.0, 1.5)])
def test_knobs_out_of_range_are_refused(latency_s: float, failure_rate: float) -> None:
    with pytest.raises(ValueError):
        ReferenceServer(latency_s=latency_s, failure_rate=failure_rate)


async def _attempts(url: str, count: int) -> list[list[str]]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:

        async def attempt(index: int) -> list[str]:
            question = f"{QUESTION} Vraag {index}."
            async with client.stream("POST", THREADS, json=body(question), headers=SSE) as r:
                thread_id = r.headers["x-soev-thread-id"]
                text = "".join([chunk async for chunk in r.aiter_text()])
            deleted = await client.delete(f"{THREADS}/{thread_id}")
            assert deleted.status_code == 204
            return [frame.event for frame in parse_frames(text)]

        return await asyncio.gather(*(attempt(index) for index in range(count)))


def test_forty_threads_at_once_run_concurrently_with_latency() -> None:
    with ReferenceServer(latency_s=0.2) as server:
        started = time.perf_counter()
        results = asyncio.run(_attempts(server.url, 40))
        elapsed = time.perf_counter() - started

    assert all(events[-2:] == ["model_output", "status"] for events in results)
    assert elapsed < 0.2 * 40 / 4
    assert server.counters.threads_opened == server.counters.threads_deleted == 40
    assert server.open_threads == 0


async def _raw_attempts(url: str, count: int, connections: int) -> None:
    """Open and delete threads over plain keep-alive sockets, as fast as the server goes."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    payload = json.dumps(body(QUESTION)).encode()
    request = (
        b"POST /v1/chat/threads HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload)
    )

    async def worker(attempts: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for _ in range(attempts):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            thread_id = head.split(b"X-Soev-Thread-Id: ")[1].split(b"\r\n")[0]
            await reader.readuntil(b"\r\n0\r\n\r\n")
            writer.write(b"DELETE /v1/chat/threads/%s HTTP/1.1\r\nHost: x\r\n\r\n" % thread_id)
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 204")
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(worker(count // connections) for _ in range(connections)))


def test_hundreds_of_attempts_per_second_at_zero_latency() -> None:
    with ReferenceServer() as server:
        started = time.perf_counter()
        asyncio.run(_raw_attempts(server.url, 320, 32))
        elapsed = time.perf_counter() - started

    assert server.counters.threads_opened == server.counters.threads_deleted == 320
    assert 320 / elapsed >= 200
