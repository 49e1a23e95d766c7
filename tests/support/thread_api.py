"""A fake soev thread API (docs/systems.md#the-soev-thread-api), for every test that needs a
system under test.

`FakeThreadAPI(script)` opens threads, takes follow-up inputs and deletes threads as the
real API does: 201 with `X-Soev-Thread-Id` and an SSE stream, 409 `thread_active` while a
turn of the thread runs, 404 for a thread it does not know, problem+json errors, and 401
without the bearer token when it has one. Each user turn is answered by
`script(text, history)`, `history` being the earlier texts of the thread. The script
returns a `Reply` (a turn in frames), a list of raw stream items, or a whole `Response` or
`Stream` (an HTTP error, a cut stream, a hang). `queue(route, ...)` answers the next
requests of a route (`open`, `input`, `delete`) before the script.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.server import (
    CUT,
    HANG,
    NOWHERE,
    Answer,
    FakeServer,
    Pause,
    Request,
    Response,
    Stream,
    problem,
)

__all__ = [
    "CUT",
    "HANG",
    "NOWHERE",
    "FakeThreadAPI",
    "Pause",
    "Reply",
    "Request",
    "Response",
    "Stream",
    "cite",
    "echo",
    "frame",
    "problem",
]


def frame(
    event: str, payload: Any, *, position: int | None = None, envelope: bool = False
) -> bytes:
    """One SSE frame; `envelope` wraps the payload as a durable event of the real service."""
    data = {"type": event, "position": position or 0, "payload": payload} if envelope else payload
    head = f"id: {position}\n" if position is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def cite(source: Any, status: str = "resolved", at: int = 0) -> dict[str, Any]:
    """A citation of `model_output`, naming the element `source`."""
    return {"source": source, "at": at, "status": status}


def _usage() -> dict[str, int] | None:
    return {"prompt_tokens": 10, "completion_tokens": 20}


@dataclass
class Reply:
    """One ordinary turn of the fake, written as what the assistant says.

    `refs` become `tool_output` elements (`id` el-N, `ref`, `bwb` = "bwb:" + ref) that the
    model output cites as resolved; `elements` and `citations` replace them when a test needs
    other shapes. `failure` ends the turn with a `failure` event instead. Anything else (an
    `error` event, no closing status, a pause, a cut) is a list of raw stream items.
    """

    content: str = ""
    refs: Sequence[str] = ()
    usage: dict[str, int] | None = field(default_factory=_usage)
    failure: str | None = None
    elements: list[dict[str, Any]] | None = None
    citations: list[dict[str, Any]] | None = None

    def frames(self, start: int = 1) -> list[bytes]:
        """The frames of the turn, numbered from position `start`."""
        events: list[tuple[str, Any]] = [("status", {"state": "running"})]
        if self.failure is not None:
            events += [("failure", {"code": self.failure, "detail": "scripted failure"})]
        else:
            events += self._answer()
        events.append(("status", {"state": "idle"}))
        return [
            frame(event, payload, position=start + index)
            for index, (event, payload) in enumerate(events)
        ]

    def _answer(self) -> list[tuple[str, Any]]:
        elements = self.elements
        if elements is None:
            elements = [
                {"id": f"el-{n}", "ref": ref, "bwb": f"bwb:{ref}", "text": "..."}
                for n, ref in enumerate(self.refs)
            ]
        citations = self.citations
        if citations is None:
            citations = [cite(element["id"]) for element in elements]
        events: list[tuple[str, Any]] = []
        if elements:
            events.append(("tool_output", {"call_id": "call-1", "elements": elements}))
        output: dict[str, Any] = {"content": self.content, "citations": citations}
        if self.usage is not None:
            output["usage"] = self.usage
        return [*events, ("delta", {"text": self.content[:5]}), ("model_output", output)]


Said = Reply | Response | Stream | list[Any]
Script = Callable[[str, list[str]], Said]


def echo(text: str, history: list[str]) -> Reply:
    """Answer `antwoord N op TEXT`, N being the turn of the thread; no usage, no citations."""
    return Reply(f"antwoord {len(history) + 1} op {text}", usage=None)


@dataclass
class Thread:
    """A thread of the fake: its id, the body that opened it, the texts sent to it."""

    id: str
    opening: dict[str, Any]
    texts: list[str] = field(default_factory=list)
    position: int = 0
    busy: bool = False


class FakeThreadAPI(FakeServer):
    """The soev thread API, answered by `script`; see the module docstring."""

    def __init__(self, script: Script = echo, *, token: str | None = None) -> None:
        super().__init__()
        self.script = script
        self.token = token
        self.threads: dict[str, Thread] = {}
        self.deleted: list[str] = []
        self.texts: list[str] = []
        """Every user text the fake was sent, in order."""
        self._queued: dict[str, deque[Answer]] = {}
        self._count = 0

    def queue(self, route: str, *answers: Answer) -> None:
        """Answer the next requests of `route` with `answers`; a queued open opens no thread."""
        self._queued.setdefault(route, deque()).extend(answers)

    def routed(self, route: str) -> list[Request]:
        """The requests of one route: `open`, `input`, `delete` or `unknown`."""
        return [request for request in self.requests if _route(request)[0] == route]

    async def handle(self, request: Request) -> Answer:
        if self.token is not None and request.headers.get("authorization") != (
            f"Bearer {self.token}"
        ):
            return problem(401, "unauthorized", "a bearer token is required")
        route, thread_id = _route(request)
        queued = self._queued.get(route)
        if queued:
            return queued.popleft()
        if route == "open":
            self._count += 1
            body = request.json()
            opened = Thread(f"thread-{self._count}", body)
            self.threads[opened.id] = opened
            return await self._turn(opened, body["input"]["text"], status=201)
        thread = self.threads.get(thread_id)
        if thread is None:
            return problem(404, "not_found", "no such thread")
        if route == "input":
            if thread.busy:
                return problem(409, "thread_active", "a turn is running")
            return await self._turn(thread, request.json()["input"]["text"], status=200)
        if route == "delete":
            del self.threads[thread_id]
            self.deleted.append(thread_id)
            return Response(204)
        return problem(404, "not_found", "no such route")

    async def _turn(self, thread: Thread, text: str, *, status: int) -> Answer:
        history = list(thread.texts)
        thread.texts.append(text)
        self.texts.append(text)
        thread.busy = True
        # In a thread of its own: a script may sleep without holding up the other turns.
        said = await asyncio.to_thread(self.script, text, history)
        if isinstance(said, Response):
            thread.busy = False
            return said

        def done() -> None:
            thread.busy = False

        headers = {"X-Soev-Thread-Id": thread.id}
        if isinstance(said, Stream):
            said.headers = {**headers, **said.headers}
            said.done = said.done or done
            return said
        if isinstance(said, Reply):
            said = said.frames(thread.position + 1)
            thread.position += len(said)
        items = _idle_once_the_turn_ends(said, thread)
        return Stream(items, status=status, headers=headers, done=done)


def _idle_once_the_turn_ends(items: list[Any], thread: Thread) -> Iterator[Any]:
    """The items of a turn; the thread takes inputs again once the frame that ends the turn
    goes out, as the real API does, even while the stream stays open."""
    for item in items:
        if isinstance(item, bytes) and _ends_the_turn(item):
            thread.busy = False
        yield item


def _ends_the_turn(item: bytes) -> bool:
    if b"event: failure" in item or b"event: error" in item:
        return True
    return b"event: status" in item and b'"running"' not in item


def _route(request: Request) -> tuple[str, str]:
    parts = request.path.strip("/").split("/")
    if parts[:3] != ["v1", "chat", "threads"]:
        return "unknown", ""
    if request.method == "POST" and len(parts) == 3:
        return "open", ""
    if request.method == "POST" and len(parts) == 5 and parts[4] == "inputs":
        return "input", parts[3]
    if request.method == "DELETE" and len(parts) == 4:
        return "delete", parts[3]
    return "unknown", ""
