"""The chat/completions adapter against a real server on 127.0.0.1: retries, timeouts, errors."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import httpx
import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.judges import ChatCompletionsLLM, verdict_schema

SCHEMA = verdict_schema(("none", "name"))


def complete(url: str, *, timeout_s: float = 5.0, **options: Any) -> str:
    async def main() -> str:
        async with httpx.AsyncClient(base_url=url, timeout=timeout_s) as client:
            llm = ChatCompletionsLLM(client, "judge-model", **({"backoff_s": 0.01} | options))
            return await llm.complete(system="Grade.", user='{"text": "Hallo"}', schema=SCHEMA)

    return asyncio.run(main())


def test_an_answer_is_the_message_content(server: Any, answer_with: Any) -> None:
    server.script = [answer_with("none")]

    assert complete(server.url) == '{"label": "none", "detail": "fine"}'
    assert server.calls == 1


def test_temperature_and_seed_are_left_out_when_none(server: Any) -> None:
    complete(server.url, temperature=None, seed=None)

    assert "temperature" not in server.requests[0]
    assert "seed" not in server.requests[0]


def test_a_configured_temperature_and_seed_are_sent(server: Any) -> None:
    complete(server.url, temperature=0.3, seed=42)

    assert (server.requests[0]["temperature"], server.requests[0]["seed"]) == (0.3, 42)


def test_a_429_is_retried_after_the_wait_the_server_asks_for(server: Any, reply: Any) -> None:
    server.script = [reply(status=429, headers={"Retry-After": "1"})]
    started = time.monotonic()

    text = complete(server.url, max_retries=1)

    assert time.monotonic() - started >= 0.9
    assert text.startswith('{"label": "none"')
    assert server.calls == 2


def test_a_retry_after_beyond_the_limit_fails_at_once(server: Any, reply: Any) -> None:
    server.script = [reply(status=429, headers={"Retry-After": "3600"})]

    with pytest.raises(JudgeError, match=r"^judge call failed: HTTP 429; the server asks to wait"):
        complete(server.url, max_retries=3)

    assert server.calls == 1


def test_a_5xx_is_retried_with_backoff(server: Any, reply: Any) -> None:
    server.script = [reply(status=503), reply(status=502)]

    text = complete(server.url, max_retries=2)

    assert text.startswith('{"label": "none"')
    assert server.calls == 3


def test_a_500_every_time_fails_after_the_retries(server: Any, reply: Any) -> None:
    server.answer = lambda body: reply(status=500)

    with pytest.raises(JudgeError) as caught:
        complete(server.url, max_retries=3)

    assert str(caught.value) == "judge call failed: HTTP 500 after 3 retries"
    assert server.calls == 4


def test_another_4xx_is_not_retried(server: Any, reply: Any) -> None:
    server.answer = lambda body: reply(status=400, body=b'{"error": "bad schema"}')

    with pytest.raises(JudgeError) as caught:
        complete(server.url, max_retries=3)

    assert str(caught.value) == "judge call failed: HTTP 400"
    assert server.calls == 1


def test_a_timeout_is_retried_and_then_fails(server: Any, reply: Any) -> None:
    server.answer = lambda body: reply(delay_s=5.0)
    started = time.monotonic()

    with pytest.raises(JudgeError) as caught:
        complete(server.url, timeout_s=0.2, max_retries=1)

    assert str(caught.value) == "judge call failed: ReadTimeout after 1 retry"
    assert server.calls == 2
    assert time.monotonic() - started < 3


def test_a_closed_port_is_a_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(JudgeError) as caught:
        complete(f"http://127.0.0.1:{port}/v1/", max_retries=1)

    assert str(caught.value) == "judge call failed: ConnectError after 1 retry"


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        (b"<html>busy</html>", "the response is not JSON"),
        (b'{"choices": []}', "the response has no choices[0].message"),
        (
            b'{"choices": [{"message": {"content": null}}]}',
            "the response message has no text content",
        ),
        (
            b'{"choices": [{"message": {"content": null, "refusal": "I cannot"}}]}',
            "the model refused to answer",
        ),
    ],
)
def test_a_response_without_answer_text_fails(
    server: Any, reply: Any, body: bytes, failure: str
) -> None:
    server.script = [reply(body=body)]

    with pytest.raises(JudgeError) as caught:
        complete(server.url)

    assert str(caught.value) == f"judge call failed: {failure}"


def test_concurrency_bounds_the_calls_in_flight(server: Any, reply: Any) -> None:
    server.answer = lambda body: reply(content='{"label": "none", "detail": ""}', delay_s=0.15)

    async def main() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=5.0) as client:
            llm = ChatCompletionsLLM(client, "judge-model", concurrency=2)
            await asyncio.gather(
                *(llm.complete(system="s", user=f'{{"n": {n}}}', schema=SCHEMA) for n in range(6))
            )

    asyncio.run(main())

    assert server.calls == 6
    assert server.max_inflight == 2


def test_the_adapter_carries_model_and_context_window() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            llm = ChatCompletionsLLM(client, "m", context_window=32_000)
            assert (llm.model, llm.context_window) == ("m", 32_000)

    asyncio.run(main())
