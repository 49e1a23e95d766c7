"""The soev thread API (docs/systems.md#the-soev-thread-api): routes, thread state, and the
event stream of a turn.

Each thread keeps its user turns, its durable events and its state. A turn runs while
its stream is written; the thread is `running` until the stream ends, and a follow-up
sent meanwhile gets 409 `thread_active`, as the real service answers. The knobs make the
server useful for benchmarks and fault tests: a fixed latency per turn, spread over the
stream, and a failure rate that ends a turn in a 503 before the stream or in a `failure`
event inside it, drawn from a seeded random generator.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from . import judge
from .assistant import Assistant
from .protocol import EventStream, Request, Response, json_response, problem, sse_frame
from .retrieval import Hit

PREFIX = ("v1", "chat", "threads")

INPUT_FIELDS = frozenset(
    {
        "text",
        "knowledge",
        "documents",
        "tools",
        "attachments",
        "texts",
        "urls",
        "images",
        "assistant_instructions",
        "user_instructions",
    }
)
OPEN_FIELDS = frozenset({"input", "agent", "model"})
FOLLOW_UP_FIELDS = frozenset({"input", "model"})
DURABLE = frozenset({"opened", "input", "tool_output", "model_output", "failure"})
DELTAS = 4


@dataclass
class Counters:
    """What the server did, for tests and benchmarks."""

    requests: int = 0
    threads_opened: int = 0
    threads_deleted: int = 0
    turns: int = 0
    failures: int = 0


@dataclass
class Thread:
    """One conversation: its user turns so far, its durable events and its state."""

    id: str
    agent: str
    model: str | None
    questions: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0
    elements: int = 0
    state: Literal["idle", "running"] = "idle"

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "pending": [], "position": self.position}

    def view(self) -> dict[str, Any]:
        return {"thread_id": self.id, "status": self.status(), "events": self.events}


class _Problem(Exception):
    """A request the API refuses (a bad body, an unknown thread), with its problem response."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


class ThreadService:
    """Answers the requests of the thread API with a reference assistant.

    Args:
        assistant: what answers each turn.
        latency_s: the time a turn takes, half before the tool output, the rest spread
            over the deltas and the model output.
        failure_rate: the probability that a turn fails: half of the failures are a 503
            before the stream, half a `failure` event after the tool output.
        seed: the seed of the failure draws.
        token: when set, every request must carry `Authorization: Bearer <token>`.
        envelopes: send durable events as the real service does, wrapped in
            `{type, position, id, stream, seq, actor, origin, ts, payload}`; otherwise
            `data` is the payload itself.
    """

    def __init__(
        self,
        assistant: Assistant,
        *,
        latency_s: float = 0.0,
        failure_rate: float = 0.0,
        seed: int = 0,
        token: str | None = None,
        envelopes: bool = False,
    ) -> None:
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError("failure_rate must be between 0 and 1")
        self.assistant = assistant
        self.latency_s = latency_s
        self.failure_rate = failure_rate
        self.token = token
        self.envelopes = envelopes
        self.counters = Counters()
        self.threads: dict[str, Thread] = {}
        self._random = random.Random(seed)

    async def handle(self, request: Request) -> Response | EventStream:
        """Route `request` to its operation."""
        self.counters.requests += 1
        if self.token is not None and request.headers.get("authorization") != (
            f"Bearer {self.token}"
        ):
            return problem(401, "unauthorized", "a valid bearer token is required")
        parts = tuple(part for part in request.path.split("/") if part)
        if parts == judge.PATH:
            return judge.answer(request)
        if parts[:3] != PREFIX or len(parts) > 5:
            return problem(404, "not_found", f"no resource at {request.path}")
        rest = parts[3:]
        operations: dict[str, Any]
        if not rest:
            operations = {"POST": self._open}
        elif len(rest) == 1:
            operations = {"GET": self._read, "DELETE": self._delete}
        elif rest[1] == "inputs":
            operations = {"POST": self._follow_up}
        else:
            return problem(404, "not_found", f"no resource at {request.path}")
        operation = operations.get(request.method)
        if operation is None:
            allowed = ", ".join(operations)
            return problem(405, "method_not_allowed", f"{request.method} (allowed: {allowed})")
        try:
            result: Response | EventStream = await operation(request, *rest[:1])
        except _Problem as refused:
            return refused.response
        return result

    async def _open(self, request: Request) -> Response | EventStream:
        body = _body(request, OPEN_FIELDS)
        agent = body.get("agent")
        if not isinstance(agent, str) or not agent.strip():
            raise _Problem(
                problem(422, "invalid_field", "agent: a non-empty agent name is required")
            )
        fields = _input(body)
        model = _model(body)
        fail = self._draw_failure()
        if fail == "before":
            return _unavailable()
        thread = Thread(id=uuid.uuid4().hex, agent=agent, model=model)
        self.threads[thread.id] = thread
        self.counters.threads_opened += 1
        headers = {"X-Soev-Thread-Id": thread.id, "Location": f"/v1/chat/threads/{thread.id}"}
        return await self._respond(request, thread, fields, 201, headers, fail=fail is not None)

    async def _follow_up(self, request: Request, thread_id: str) -> Response | EventStream:
        thread = self._thread(thread_id)
        body = _body(request, FOLLOW_UP_FIELDS)
        fields = _input(body)
        if thread.state == "running":
            return problem(409, "thread_active", "a turn of this thread is still running")
        model = _model(body)
        if model is not None:
            thread.model = model
        fail = self._draw_failure()
        if fail == "before":
            return _unavailable()
        return await self._respond(request, thread, fields, 200, {}, fail=fail is not None)

    async def _read(self, request: Request, thread_id: str) -> Response:
        return json_response(200, self._thread(thread_id).view())

    async def _delete(self, request: Request, thread_id: str) -> Response:
        self._thread(thread_id)
        del self.threads[thread_id]
        self.counters.threads_deleted += 1
        return Response(204)

    def _thread(self, thread_id: str) -> Thread:
        thread = self.threads.get(thread_id)
        if thread is None:
            raise _Problem(problem(404, "not_found", f"no thread {thread_id!r}"))
        return thread

    def _draw_failure(self) -> Literal["before", "during"] | None:
        if self.failure_rate <= 0 or self._random.random() >= self.failure_rate:
            return None
        self.counters.failures += 1
        return "before" if self._random.random() < 0.5 else "during"

    async def _respond(
        self,
        request: Request,
        thread: Thread,
        fields: Mapping[str, Any],
        status: int,
        headers: Mapping[str, str],
        *,
        fail: bool,
    ) -> Response | EventStream:
        thread.state = "running"
        self.counters.turns += 1
        frames = self._turn(thread, fields, opening=status == 201, fail=fail)
        if "text/event-stream" in request.headers.get("accept", ""):
            return EventStream(status, frames, headers)
        async for _ in frames:
            pass
        return json_response(status, thread.view(), headers)

    async def _turn(
        self, thread: Thread, fields: Mapping[str, Any], *, opening: bool, fail: bool
    ) -> AsyncIterator[bytes]:
        """The frames of one turn; the thread is idle again when they end, however they end."""
        pace = _Pace()
        try:
            if opening:
                yield self._frame(thread, "opened", {"thread_id": thread.id, "agent": thread.agent})
            yield self._frame(thread, "input", {"input": dict(fields)})
            half = self.latency_s / 2
            await pace.until(half)
            reply = self.assistant.answer(fields["text"], thread.questions)
            elements = _elements(thread, reply.hits or ())
            element_ids = [element["id"] for element in elements]
            if reply.hits is not None:
                call_id = f"call-{len(thread.questions) + 1}"
                yield self._frame(thread, "tool_output", {"call_id": call_id, "elements": elements})
            if fail:
                detail = "the model call failed (failure injected by the reference server)"
                yield self._frame(thread, "failure", {"code": "model_error", "detail": detail})
            else:
                pieces = _pieces(reply.content, DELTAS)
                step = half / (len(pieces) + 1)
                for number, piece in enumerate(pieces, 1):
                    await pace.until(half + number * step)
                    yield self._frame(thread, "delta", {"text": piece})
                await pace.until(self.latency_s)
                citations = [
                    {"source": element_ids[cited.hit], "at": cited.at, "status": "resolved"}
                    for cited in reply.citations
                ]
                usage = {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                }
                output = {"content": reply.content, "citations": citations, "usage": usage}
                yield self._frame(thread, "model_output", output)
                thread.questions.append(fields["text"])
            thread.state = "idle"
            yield self._frame(thread, "status", thread.status())
        finally:
            thread.state = "idle"

    def _frame(self, thread: Thread, event: str, payload: dict[str, Any]) -> bytes:
        thread.position += 1
        if event not in DURABLE:
            return sse_frame(thread.position, event, payload)
        seq = thread.position - 1
        envelope = {
            "type": event,
            "position": thread.position,
            "id": f"root:{seq}",
            "stream": "root",
            "seq": seq,
            "actor": {"input": "user", "opened": "system"}.get(event, "model"),
            "origin": None,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "payload": payload,
        }
        thread.events.append(envelope)
        return sse_frame(thread.position, event, envelope if self.envelopes else payload)


def _elements(thread: Thread, hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """The tool-output elements of `hits`, numbered on from the thread's earlier ones."""
    elements = []
    for hit in hits:
        thread.elements += 1
        unit = hit.unit
        title = f"{unit.law}, artikel {unit.article}" if unit.law and unit.article else None
        elements.append(
            {
                "id": f"el-{thread.elements}",
                "type": "document",
                "ref": unit.id,
                "title": title or unit.id,
                "text": unit.text,
            }
        )
    return elements


class _Pace:
    """The moments of a turn, counted from its start: each pause waits until its moment,
    not for a share of the latency of its own. So the time the frames take to be written,
    and a sleep that wakes late on a busy loop, do not add up over the turn: with a share
    each, a 50 ms turn took 55 ms under the load of `bench/throughput.py`'s fast run."""

    def __init__(self) -> None:
        self._start = _clock()

    async def until(self, offset: float) -> None:
        """Wait until `offset` seconds after the turn began (at once if that is past)."""
        delay = self._start + offset - _clock()
        if delay > 0:
            await asyncio.sleep(delay)


_clock = time.monotonic


def _pieces(text: str, count: int) -> list[str]:
    """`text` cut at spaces into about `count` pieces that join back to it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // count))
    return [
        " ".join(words[start : start + size]) + (" " if start + size < len(words) else "")
        for start in range(0, len(words), size)
    ]


def _unavailable() -> Response:
    return problem(503, "service_unavailable", "the model is unavailable (injected failure)")


def _body(request: Request, allowed: frozenset[str]) -> dict[str, Any]:
    try:
        body = json.loads(request.body) if request.body else None
    except (ValueError, UnicodeDecodeError):
        raise _Problem(problem(400, "invalid_field", "the body is not valid JSON")) from None
    if not isinstance(body, dict):
        raise _Problem(problem(400, "invalid_field", "the body must be a JSON object"))
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise _Problem(problem(400, "unknown_field", f"unknown field {unknown[0]!r}"))
    return body


def _input(body: Mapping[str, Any]) -> dict[str, Any]:
    fields = body.get("input")
    if not isinstance(fields, dict):
        raise _Problem(problem(422, "invalid_field", "input: an object with a text is required"))
    unknown = sorted(set(fields) - INPUT_FIELDS)
    if unknown:
        raise _Problem(problem(400, "unknown_field", f"unknown field 'input.{unknown[0]}'"))
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _Problem(problem(422, "invalid_field", "input.text: a non-empty text is required"))
    return fields


def _model(body: Mapping[str, Any]) -> str | None:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise _Problem(problem(422, "invalid_field", "model: a model name must be a string"))
    return model
