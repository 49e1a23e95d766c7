"""Text from the wire that cannot be written (a lone surrogate) or must not be trusted (a
control character in a failure code, a secret past the detail's cut): every arm archives the
attempt, never stops on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from soev_pipeline.arms import ChatCompletionsArm, SoevThreadArm, create_http_client
from soev_pipeline.arms.http import MAX_DETAIL
from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import REDACTED, forget_secrets, register_secret
from tests.support.builders import FAST_RETRY, conversation, system_config
from tests.support.chat_completions import FakeChatCompletions, completion
from tests.support.thread_api import NOWHERE, FakeThreadAPI, Reply, frame, problem

pytestmark = pytest.mark.anyio

LONE = "\\ud83d"
"""A lone surrogate escape as JSON carries it: half of an emoji."""


@pytest.fixture(autouse=True)
def _no_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def raw_frame(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


async def thread_attempt(soev: FakeThreadAPI, *turns: str) -> Evidence:
    config = system_config(NOWHERE)
    async with create_http_client(config, transport=soev.transport()) as http:
        arm = SoevThreadArm(http, config, retry=FAST_RETRY)
        return await arm.attempt(conversation(*turns), attempt=0, fields={})


async def chat_attempt(chat: FakeChatCompletions, *turns: str) -> Evidence:
    config = system_config(NOWHERE + "v1", kind="chat-completions", model="m")
    async with create_http_client(config, transport=chat.transport()) as http:
        arm = ChatCompletionsArm(http, config, retry=FAST_RETRY)
        return await arm.attempt(conversation(*turns), attempt=0, fields={})


async def test_a_lone_surrogate_in_a_reply_and_a_citation_is_replaced() -> None:
    output = (
        f'{{"content": "Zes weken {LONE}.", "citations": [{{"source": "e1", "status": '
        '"resolved"}]}'
    )
    elements = f'{{"elements": [{{"id": "e1", "ref": "BWBR0005537/art{LONE}"}}]}}'
    soev = FakeThreadAPI(
        lambda text, history: [
            raw_frame("tool_output", elements),
            raw_frame("model_output", output),
            frame("status", {"state": "idle"}),
        ]
    )
    evidence = await thread_attempt(soev, "Hoe lang?")
    assert evidence.failure is None
    assert evidence.reply == "Zes weken \ufffd."
    assert evidence.citations == ("BWBR0005537/art\ufffd",)
    assert Evidence.model_validate_json(evidence.model_dump_json()) == evidence


async def test_a_lone_surrogate_in_a_failure_event_and_an_error_body_is_replaced() -> None:
    soev = FakeThreadAPI(
        lambda text, history: [
            raw_frame("failure", f'{{"code": "model_error", "detail": "kapot {LONE}"}}')
        ]
    )
    evidence = await thread_attempt(soev, "Een")
    assert evidence.failure is not None
    assert (evidence.failure.code, evidence.failure.detail) == (
        "model_error",
        "failure event: kapot \ufffd",
    )
    soev = FakeThreadAPI()
    soev.queue("open", problem(500, "internal", json.loads(f'"mis {LONE}"')))
    evidence = await thread_attempt(soev, "Een")
    assert evidence.failure is not None and evidence.failure.detail.endswith("mis \ufffd")


@pytest.mark.parametrize("code", ["\x1b[2Jwiped", "a" * 65, "", "met spatie", 42])
async def test_a_failure_code_that_is_not_a_token_falls_back_to_the_event_type(
    code: Any,
) -> None:
    soev = FakeThreadAPI(lambda text, history: [frame("error", {"code": code, "detail": "x"})])
    evidence = await thread_attempt(soev, "Een")
    assert evidence.failure is not None and evidence.failure.code == "error"


async def test_a_secret_is_redacted_before_the_detail_is_cut() -> None:
    """A key that straddles the cut would leave its start behind if cut first."""
    key = "sk-live-0123456789abcdef"
    register_secret(key)
    detail = "x" * (MAX_DETAIL - 25) + key  # after "failure event: ", across the cut
    soev = FakeThreadAPI(
        lambda text, history: [frame("failure", {"code": "boom", "detail": detail})]
    )
    evidence = await thread_attempt(soev, "Een")
    assert evidence.failure is not None
    assert "sk-live" not in evidence.failure.detail and len(evidence.failure.detail) <= MAX_DETAIL
    assert REDACTED[:5] in evidence.failure.detail


async def test_chat_completions_with_a_lone_surrogate_goes_on_to_the_next_turn() -> None:
    """The reply is sent back in the next request: it must encode."""
    chat = FakeChatCompletions()
    chat.queue(completion(body=b'{"choices": [{"message": {"content": "half \\ud83d"}}]}'))
    evidence = await chat_attempt(chat, "Een", "Twee")
    assert evidence.failure is None
    assert [turn.reply for turn in evidence.turns] == ["half \ufffd", "antwoord 2"]
    assert chat.bodies[1]["messages"][1] == {"role": "assistant", "content": "half \ufffd"}


@pytest.mark.parametrize(
    ("content", "reply"),
    [
        ([{"type": "text", "text": "Zes "}, {"type": "text", "text": "weken."}], "Zes weken."),
        ([{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Ja."}], "Ja."),
    ],
)
async def test_chat_completions_content_as_text_parts_is_read(
    content: list[dict[str, str]], reply: str
) -> None:
    chat = FakeChatCompletions()
    chat.queue(completion(body={"choices": [{"message": {"content": content}}]}))
    evidence = await chat_attempt(chat, "Een")
    assert (evidence.reply, evidence.failure) == (reply, None)


@pytest.mark.parametrize(
    "content",
    [
        [],
        [{"type": "image_url", "image_url": {"url": "x"}}],
        [{"type": "text", "text": "Ja."}, {"type": "image_url", "image_url": {"url": "x"}}],
        [{"type": "text", "text": 3}],
        [{"type": "thinking", "thinking": "alleen denken"}],
        ["los"],
    ],
)
async def test_chat_completions_content_parts_without_text_are_malformed(
    content: list[Any],
) -> None:
    chat = FakeChatCompletions()
    chat.queue(completion(body={"choices": [{"message": {"content": content}}]}))
    evidence = await chat_attempt(chat, "Een")
    assert evidence.failure is not None and evidence.failure.code == "malformed_response"


async def test_a_cited_surrogate_unit_and_reply_survive_a_real_socket() -> None:
    reply = Reply(json.loads(f'"Artikel 6:7 {LONE}"'), refs=["BWBR0005537/artikel-6:7"], usage=None)
    with FakeThreadAPI(lambda text, history: reply) as soev:
        config = system_config(soev.url)
        async with create_http_client(config) as http:
            arm = SoevThreadArm(http, config, retry=FAST_RETRY)
            evidence = await arm.attempt(conversation("Een"), attempt=0, fields={})
    assert evidence.reply == "Artikel 6:7 \ufffd"
    assert evidence.citations == ("BWBR0005537/artikel-6:7",)
