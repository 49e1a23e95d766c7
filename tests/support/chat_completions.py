"""A fake OpenAI-compatible `chat/completions` endpoint: the judge, or a `chat-completions` system.

`FakeChatCompletions()` answers `POST /v1/chat/completions` (404 elsewhere) with the next
queued answer, else with `answer(body)`: by default the first label that the request's JSON
schema allows (a judge's answer), or `antwoord N` to a conversation without a schema, N being
its number of user messages. An answer is a content string, or a `Response`/`Stream` for
status codes, `Retry-After`, garbage bodies and delays; `completion(...)` and `verdict(...)`
build the usual ones. Every request is recorded.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

from tests.support.server import (
    HANG,
    NOWHERE,
    Answer,
    FakeServer,
    Request,
    Response,
    Stream,
)

__all__ = [
    "HANG",
    "NOWHERE",
    "FakeChatCompletions",
    "Response",
    "Stream",
    "completion",
    "labels_of",
    "verdict",
]

PATH = "/v1/chat/completions"


def completion(
    content: str | None = None,
    *,
    status: int = 200,
    body: Any = None,
    headers: dict[str, str] | None = None,
    delay_s: float = 0.0,
    usage: dict[str, int] | None = None,
    refusal: str | None = None,
) -> Response:
    """A chat completion whose message is `content`; `body` replaces the whole body."""
    if body is None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            message["refusal"] = refusal
        body = {
            "id": "cmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        if usage is not None:
            body["usage"] = usage
    return Response(status, body, dict(headers or {}), delay_s)


def verdict(label: str, detail: str = "fine") -> Response:
    """A judge's well-formed answer with `label`."""
    return completion(json.dumps({"label": label, "detail": detail}))


def labels_of(body: dict[str, Any]) -> list[str]:
    """The labels that a judge request allows: the enum of its JSON schema."""
    schema = body["response_format"]["json_schema"]["schema"]
    return list(schema["properties"]["label"]["enum"])


def default_answer(body: dict[str, Any]) -> Response:
    """A judge request gets its first label; a conversation gets `antwoord N` with usage."""
    if "response_format" in body:
        return verdict(labels_of(body)[0])
    turn = sum(1 for message in body["messages"] if message["role"] == "user")
    usage = {"prompt_tokens": 10 * turn, "completion_tokens": turn, "total_tokens": 11 * turn}
    return completion(f"antwoord {turn}", usage=usage)


Said = Answer | str


class FakeChatCompletions(FakeServer):
    """An OpenAI-compatible endpoint; see the module docstring. `url` ends in `/v1/`."""

    base_path = "/v1/"

    def __init__(self, answer: Callable[[dict[str, Any]], Said] = default_answer) -> None:
        super().__init__()
        self.answer = answer
        self._queued: deque[Said] = deque()

    def queue(self, *answers: Said) -> None:
        """Answer the next requests with `answers`, in order, before `answer`."""
        self._queued.extend(answers)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the requests to `chat/completions`."""
        return [request.json() for request in self.requests if request.path == PATH]

    @property
    def calls(self) -> int:
        return len(self.requests)

    def user_inputs(self, index: int = -1) -> dict[str, Any]:
        """The inputs of a judge request: the JSON of its user message."""
        decoded: dict[str, Any] = json.loads(self.bodies[index]["messages"][1]["content"])
        return decoded

    async def handle(self, request: Request) -> Answer:
        if request.path != PATH:
            return Response(404, {"error": {"message": f"no route {request.path}"}})
        said = self._queued.popleft() if self._queued else self.answer(request.json())
        return completion(said) if isinstance(said, str) else said
