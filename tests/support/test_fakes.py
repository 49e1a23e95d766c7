"""The shared fakes keep the protocols they stand in for, the same over a socket and over the
MockTransport: every test of the arms, the judge and the CLI relies on them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.chat_completions import FakeChatCompletions, completion
from tests.support.thread_api import HANG, NOWHERE, FakeThreadAPI, Reply

OPEN = {"input": {"text": "Hoe lang?"}, "agent": "wetwijzer"}


def script(text: str, history: list[str]) -> Reply:
    return Reply(f"Zes weken ({len(history)}).", refs=["BWBR0005537/artikel-6:7"])


@pytest.fixture(params=["socket", "mock"])
async def client(
    request: pytest.FixtureRequest, anyio_backend: str
) -> AsyncIterator[tuple[FakeThreadAPI, httpx.AsyncClient]]:
    """The thread API fake with a client, over a socket or over the MockTransport."""
    fake = FakeThreadAPI(script, token="geheim")
    headers = {"Authorization": "Bearer geheim", "Accept": "text/event-stream"}
    with contextlib.ExitStack() as stack:
        if request.param == "socket":
            stack.enter_context(fake)
        url, transport = (
            (fake.url, None) if request.param == "socket" else (NOWHERE, fake.transport())
        )
        async with httpx.AsyncClient(base_url=url, headers=headers, transport=transport) as http:
            yield fake, http


@pytest.mark.anyio
async def test_a_thread_is_opened_continued_and_deleted(
    client: tuple[FakeThreadAPI, httpx.AsyncClient],
) -> None:
    fake, http = client
    opened = await http.post("v1/chat/threads", json=OPEN)
    assert opened.status_code == 201
    thread = opened.headers["x-soev-thread-id"]
    assert "event: tool_output" in opened.text and '"state": "idle"' in opened.text
    inputs = f"v1/chat/threads/{thread}/inputs"
    follow = await http.post(inputs, json={"input": {"text": "En?"}})
    assert follow.status_code == 200 and "Zes weken (1)." in follow.text
    assert "id: 7\n" in follow.text  # positions go on over the turns of the thread
    assert (await http.delete(f"v1/chat/threads/{thread}")).status_code == 204
    gone = await http.delete(f"v1/chat/threads/{thread}")
    assert (gone.status_code, gone.json()["code"]) == (404, "not_found")
    assert gone.headers["content-type"] == "application/problem+json"
    assert fake.texts == ["Hoe lang?", "En?"] and fake.deleted == [thread]


@pytest.mark.anyio
async def test_a_request_without_the_bearer_token_is_refused(
    client: tuple[FakeThreadAPI, httpx.AsyncClient],
) -> None:
    fake, http = client
    wrong = {"Authorization": "Bearer fout"}
    refused = await http.post("v1/chat/threads", json=OPEN, headers=wrong)
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
    assert fake.threads == {}


def test_an_input_while_a_turn_runs_is_409_thread_active() -> None:
    fake = FakeThreadAPI(lambda text, history: [b"event: delta\ndata: {}\n\n", HANG])
    inputs = {"input": {"text": "En?"}}
    with (
        fake,
        httpx.Client(base_url=fake.url) as http,
        http.stream("POST", "v1/chat/threads", json=OPEN) as running,
    ):
        thread = running.headers["x-soev-thread-id"]
        busy = http.post(f"v1/chat/threads/{thread}/inputs", json=inputs)
    assert (busy.status_code, busy.json()["code"]) == (409, "thread_active")


def test_the_chat_completions_fake_answers_queues_and_refuses_other_paths() -> None:
    fake = FakeChatCompletions()
    fake.queue(completion(status=429, headers={"Retry-After": "2"}))
    with fake, httpx.Client(base_url=fake.url) as http:
        busy = http.post("chat/completions", json={"messages": []})
        conversation = {"messages": [{"role": "user", "content": "Een"}]}
        answered = http.post("chat/completions", json=conversation)
        elsewhere = http.post("embeddings", json={})
    assert (busy.status_code, busy.headers["retry-after"]) == (429, "2")
    assert answered.json()["choices"][0]["message"]["content"] == "antwoord 1"
    assert elsewhere.status_code == 404
    assert [request.path for request in fake.requests][-1] == "/v1/embeddings"
    assert len(fake.bodies) == 2
