"""ChatCompletionsArm against a scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from soev_pipeline.arms import ChatCompletionsArm, create_http_client
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.models import Usage

pytestmark = pytest.mark.anyio


def completion(content: Any, usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class ChatServer:
    """Answers every user message with `antwoord N`, unless a response is queued."""

    def __init__(self, kit: Any) -> None:
        self.kit = kit
        self.queued: list[Any] = []
        self.server = kit.Server(self.handle)

    async def handle(self, request: Any) -> Any:
        if request.path != "/v1/chat/completions":
            return self.kit.Reply(404, {"error": {"message": "no route"}})
        if self.queued:
            return self.queued.pop(0)
        messages = request.json()["messages"]
        turn = sum(1 for message in messages if message["role"] == "user")
        usage = {"prompt_tokens": 10 * turn, "completion_tokens": turn, "total_tokens": 11 * turn}
        return self.kit.Reply(200, completion(f"antwoord {turn}", usage))

    @property
    def requests(self) -> list[Any]:
        return self.server.requests


@pytest.fixture
async def chat(kit: Any, anyio_backend: str) -> AsyncIterator[ChatServer]:
    server = ChatServer(kit)
    await server.server.start()
    yield server
    await server.server.stop()


async def run(kit: Any, chat: ChatServer, case: Any, **system: Any) -> Any:
    settings = {"kind": "chat-completions", "model": "wet-llm", **system}
    config = kit.system_for(chat.server.url + "v1", **settings)
    async with create_http_client(config) as http:
        arm = ChatCompletionsArm(http, config, retry=kit.FAST)
        return await arm.attempt(case, attempt=1, fields={"knowledge": ["ignored"]})


async def test_turns_are_sent_as_one_growing_conversation(kit: Any, chat: ChatServer) -> None:
    evidence = await run(kit, chat, kit.make_case("Een", "Twee"))

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


async def test_variants_are_conversations_of_their_own(kit: Any, chat: ChatServer) -> None:
    case = kit.make_case("Basis", variants=(("Anders", "Verder"),))
    evidence = await run(kit, chat, case)
    [variant] = evidence.variants
    assert (variant.id, variant.reply) == ("c-1-0", "antwoord 2")
    assert evidence.reply == "antwoord 1"
    assert len(chat.requests) == 3


async def test_usage_absent_is_unknown(kit: Any, chat: ChatServer) -> None:
    chat.queued.append(kit.Reply(200, completion("Zonder telling.")))
    evidence = await run(kit, chat, kit.make_case("Een"))
    assert (evidence.reply, evidence.turns[0].usage) == ("Zonder telling.", None)


async def test_a_refusal_without_content_is_the_reply(kit: Any, chat: ChatServer) -> None:
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "Dat kan ik niet."
    chat.queued.append(kit.Reply(200, body))
    evidence = await run(kit, chat, kit.make_case("Een"))
    assert evidence.reply == "Dat kan ik niet."


async def test_a_500_is_recorded_and_not_retried(kit: Any, chat: ChatServer) -> None:
    error = {"error": {"message": "boom", "type": "server_error", "code": None}}
    chat.queued.append(kit.Reply(500, error))
    evidence = await run(kit, chat, kit.make_case("Een", "Twee"))
    failure = evidence.turns[0].failure
    assert (failure.code, failure.detail) == ("http_500", "HTTP 500: boom")
    assert len(evidence.turns) == 1
    assert evidence.reply is None
    assert len(chat.requests) == 1


async def test_an_openai_error_code_is_kept(kit: Any, chat: ChatServer) -> None:
    error = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    chat.queued.append(kit.Reply(400, error))
    evidence = await run(kit, chat, kit.make_case("Een"))
    assert evidence.failure.code == "context_length_exceeded"


async def test_a_502_is_retried(kit: Any, chat: ChatServer) -> None:
    chat.queued.append(kit.Reply(502, b"bad gateway"))
    evidence = await run(kit, chat, kit.make_case("Een"))
    assert (evidence.reply, evidence.failure) == ("antwoord 1", None)
    assert len(chat.requests) == 2


@pytest.mark.parametrize(
    "body",
    [b"not json", {"choices": []}, {"choices": [{"message": {"content": 3}}]},
     completion("x", {"prompt_tokens": -1, "completion_tokens": 0})],
)  # fmt: skip
async def test_a_body_that_is_no_completion_fails_the_turn(
    kit: Any, chat: ChatServer, body: Any
) -> None:
    chat.queued.append(kit.Reply(200, body))
    evidence = await run(kit, chat, kit.make_case("Een"))
    assert evidence.failure.code == "malformed_response"


async def test_a_slow_answer_times_out(kit: Any, chat: ChatServer) -> None:
    chat.queued.append(kit.Stream([kit.HANG]))
    evidence = await run(kit, chat, kit.make_case("Een"), timeout_s=0.3)
    assert evidence.failure.code == "timeout"


async def test_the_model_is_required(kit: Any) -> None:
    config = kit.system_for("http://127.0.0.1:9/", kind="chat-completions")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ArmError, match=r"system\.model"):
            ChatCompletionsArm(http, config)
