"""The chat/completions adapter against the fake endpoint: answers, retries, errors, over the
MockTransport, and timeouts and a closed port over real sockets."""

from __future__ import annotations

import asyncio
import math
import socket
from typing import Any

import httpx
import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.judges import ChatCompletionsLLM, verdict_schema
from tests.support.chat_completions import NOWHERE, FakeChatCompletions, completion, verdict

SCHEMA = verdict_schema(("none", "name"))


@pytest.fixture
def chat() -> FakeChatCompletions:
    return FakeChatCompletions()


def complete(chat: FakeChatCompletions | str, *, timeout_s: float = 5.0, **options: Any) -> str:
    """Ask once through the adapter: over `chat`'s MockTransport, or to the URL `chat`."""
    url = chat if isinstance(chat, str) else NOWHERE + "v1/"
    transport = None if isinstance(chat, str) else chat.transport()

    async def main() -> str:
        async with httpx.AsyncClient(
            base_url=url, timeout=timeout_s, transport=transport
        ) as client:
            llm = ChatCompletionsLLM(client, "judge-model", **({"backoff_s": 0.01} | options))
            return await llm.complete(system="Grade.", user='{"text": "Hallo"}', schema=SCHEMA)

    return asyncio.run(main())


def test_an_answer_is_the_message_content(chat: FakeChatCompletions) -> None:
    chat.queue(verdict("none"))

    assert complete(chat) == '{"label": "none", "detail": "fine"}'
    assert chat.calls == 1


def test_temperature_and_seed_are_left_out_when_none(chat: FakeChatCompletions) -> None:
    complete(chat, temperature=None, seed=None)

    assert "temperature" not in chat.bodies[0]
    assert "seed" not in chat.bodies[0]


def test_a_configured_temperature_and_seed_are_sent(chat: FakeChatCompletions) -> None:
    complete(chat, temperature=0.3, seed=42)

    assert (chat.bodies[0]["temperature"], chat.bodies[0]["seed"]) == (0.3, 42)


def test_a_429_is_retried(chat: FakeChatCompletions) -> None:
    """How long a retry waits for `Retry-After` is the arm's test: one retry loop serves both."""
    chat.queue(completion(status=429, headers={"Retry-After": "0"}))

    text = complete(chat, max_retries=1)

    assert text.startswith('{"label": "none"')
    assert chat.calls == 2


def test_a_retry_after_beyond_the_limit_fails_at_once(chat: FakeChatCompletions) -> None:
    chat.queue(completion(status=429, headers={"Retry-After": "3600"}))

    with pytest.raises(JudgeError, match=r"^judge call failed: HTTP 429; the server asks to wait"):
        complete(chat, max_retries=3)

    assert chat.calls == 1


def test_a_5xx_is_retried_with_backoff(chat: FakeChatCompletions) -> None:
    chat.queue(completion(status=503), completion(status=502))

    text = complete(chat, max_retries=2)

    assert text.startswith('{"label": "none"')
    assert chat.calls == 3


def test_a_500_every_time_fails_after_the_retries(chat: FakeChatCompletions) -> None:
    chat.answer = lambda body: completion(status=500)

    with pytest.raises(JudgeError) as caught:
        complete(chat, max_retries=3)

    assert str(caught.value) == "judge call failed: HTTP 500 after 3 retries"
    assert chat.calls == 4


def test_another_4xx_is_not_retried(chat: FakeChatCompletions) -> None:
    chat.answer = lambda body: completion(status=400, body=b'{"error": "bad schema"}')

    with pytest.raises(JudgeError) as caught:
        complete(chat, max_retries=3)

    assert str(caught.value) == "judge call failed: HTTP 400"
    assert chat.calls == 1


def test_a_timeout_is_retried_and_then_fails(chat: FakeChatCompletions) -> None:
    chat.answer = lambda body: completion(delay_s=math.inf)  # only a timeout ends the call

    with chat, pytest.raises(JudgeError) as caught:
        complete(chat.url, timeout_s=0.2, max_retries=1)

    assert str(caught.value) == "judge call failed: ReadTimeout after 1 retry"
    assert chat.calls == 2


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
    chat: FakeChatCompletions, body: bytes, failure: str
) -> None:
    chat.queue(completion(body=body))

    with pytest.raises(JudgeError) as caught:
        complete(chat)

    assert str(caught.value) == f"judge call failed: {failure}"


def test_concurrency_bounds_the_calls_in_flight(chat: FakeChatCompletions) -> None:
    chat.answer = lambda body: completion(content='{"label": "none", "detail": ""}', delay_s=0.15)

    async def main() -> None:
        transport = chat.transport()
        async with httpx.AsyncClient(base_url=NOWHERE + "v1/", transport=transport) as client:
            llm = ChatCompletionsLLM(client, "judge-model", concurrency=2)
            await asyncio.gather(
                *(llm.complete(system="s", user=f'{{"n": {n}}}', schema=SCHEMA) for n in range(6))
            )

    asyncio.run(main())

    assert chat.calls == 6
    assert chat.max_in_flight == 2


def test_the_adapter_carries_model_and_context_window() -> None:
    async def main() -> None:
        async with httpx.AsyncClient(transport=FakeChatCompletions().transport()) as client:
            llm = ChatCompletionsLLM(client, "m", context_window=32_000)
            assert (llm.model, llm.context_window) == ("m", 32_000)

    asyncio.run(main())
