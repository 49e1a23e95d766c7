"""ChatCompletionsArm against the fake chat/completions endpoint, over a MockTransport."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from soev_pipeline.arms import ChatCompletionsArm, create_http_client
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.models import Case, Evidence, Usage
from tests.support.builders import FAST_RETRY, conversation, system_config
from tests.support.chat_completions import (
    HANG,
    NOWHERE,
    FakeChatCompletions,
    Response,
    Stream,
    completion,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def chat() -> FakeChatCompletions:
    return FakeChatCompletions()


async def run(
    chat: FakeChatCompletions, case: Case, *, socket: bool = False, **system: Any
) -> Evidence:
    """An attempt of `case`, over the MockTransport unless `socket` says over chat's socket."""
    settings = {"kind": "chat-completions", "model": "wet-llm", **system}
    config = system_config(chat.url if socket else NOWHERE + "v1", **settings)
    transport = None if socket else chat.transport()
    async with create_http_client(config, transport=transport) as http:
        arm = ChatCompletionsArm(http, config, retry=FAST_RETRY)
        return await arm.attempt(case, attempt=1, fields={"knowledge": ["ignored"]})


async def test_turns_are_sent_as_one_growing_conversation(chat: FakeChatCompletions) -> None:
    evidence = await run(chat, conversation("Een", "Twee"))

    assert [turn.reply for turn in evidence.turns] == ["antwoord 1", "antwoord 2"]
    assert (evidence.reply, evidence.citations, evidence.failure) == ("antwoord 2", (), None)
    first, second = (request.json() for request in chat.requests)
    assert first == {"model": "wet-llm", "messages": [{"role": "user", "content": "Een"}]}
    assert second == {
        "model": "wet-llm",
        "messages": [
            {"role": "user", "content": "Een"},
            {"role": "assistant", "content": "antwoord 1"},
            {"role": "user", "content": "Twee"},
        ],
    }
    assert [turn.usage for turn in evidence.turns] == [
        Usage(prompt_tokens=10, completion_tokens=1),
        Usage(prompt_tokens=20, completion_tokens=2),
    ]
    assert all(turn.duration_s > 0 for turn in evidence.turns)


async def test_variants_are_conversations_of_their_own(chat: FakeChatCompletions) -> None:
    case = conversation("Basis", variants=(("Anders", "Verder"),))
    evidence = await run(chat, case)
    [variant] = evidence.variants
    assert (variant.id, variant.reply) == ("c-1-0", "antwoord 2")
    assert evidence.reply == "antwoord 1"
    assert len(chat.requests) == 3


async def test_usage_absent_is_unknown(chat: FakeChatCompletions) -> None:
    chat.queue(completion("Zonder telling."))
    evidence = await run(chat, conversation("Een"))
    assert (evidence.reply, evidence.turns[0].usage) == ("Zonder telling.", None)


async def test_a_refusal_without_content_is_the_reply(chat: FakeChatCompletions) -> None:
    chat.queue(completion(None, refusal="Dat kan ik niet."))
    evidence = await run(chat, conversation("Een"))
    assert evidence.reply == "Dat kan ik niet."


async def test_a_500_is_recorded_and_not_retried(chat: FakeChatCompletions) -> None:
    error = {"error": {"message": "boom", "type": "server_error", "code": None}}
    chat.queue(Response(500, error))
    evidence = await run(chat, conversation("Een", "Twee"))
    failure = evidence.turns[0].failure
    assert (failure.code, failure.detail) == ("http_500", "HTTP 500: boom")
    assert len(evidence.turns) == 1
    assert evidence.reply is None
    assert len(chat.requests) == 1


async def test_an_openai_error_code_is_kept(chat: FakeChatCompletions) -> None:
    error = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    chat.queue(Response(400, error))
    evidence = await run(chat, conversation("Een"))
    assert evidence.failure.code == "context_length_exceeded"


async def test_a_502_is_retried(chat: FakeChatCompletions) -> None:
    chat.queue(Response(502, b"bad gateway"))
    evidence = await run(chat, conversation("Een"))
    assert (evidence.reply, evidence.failure) == ("antwoord 1", None)
    assert len(chat.requests) == 2


@pytest.mark.parametrize(
    "body",
    [b"not json", {"choices": []}, {"choices": [{"message": {"content": 3}}]},
     completion("x", usage={"prompt_tokens": -1, "completion_tokens": 0}).body],
)  # fmt: skip
async def test_a_body_that_is_no_completion_fails_the_turn(
    chat: FakeChatCompletions, body: Any
) -> None:
    chat.queue(Response(200, body))
    evidence = await run(chat, conversation("Een"))
    assert evidence.failure.code == "malformed_response"


async def test_a_slow_answer_times_out() -> None:
    with FakeChatCompletions() as chat:
        chat.queue(Stream([HANG]))
        evidence = await run(chat, conversation("Een"), socket=True, timeout_s=0.3)
    assert evidence.failure.code == "timeout"


async def test_the_model_is_required() -> None:
    config = system_config(NOWHERE, kind="chat-completions")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ArmError, match=r"system\.model"):
            ChatCompletionsArm(http, config)
