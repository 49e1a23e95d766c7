"""A scriptable HTTP server on 127.0.0.1 for the arms' tests, and a fake soev thread API on it.

`Server` speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies in, plain or
chunked or close-delimited bodies out) to misbehave on purpose: pause mid-stream, cut the
connection in the middle of a frame, or hang until the client goes away. It counts the
event streams that are open at once.

Tests reach the helpers through the `kit` fixture (this module), so they need no import
path of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from soev_pipeline.arms import RetryPolicy
from soev_pipeline.core.models import Case
from soev_pipeline.core.project import SystemConfig

FAST = RetryPolicy(backoff_s=0.01, backoff_cap_s=0.05)


@dataclass
class Request:
    """A request as the server received it (header names in lower case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """A complete response; a dict or list body is sent as JSON."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Pause:
    """Wait this long before the next item of a stream."""

    seconds: float


CUT = "cut"  # close the connection at once, whatever the body still owes
HANG = "hang"  # send nothing more until the client closes the connection


@dataclass
class Stream:
    """An event stream: bytes are sent as they come, `Pause`, `CUT` and `HANG` act."""

    items: Iterable[Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = True


Handler = Callable[[Request], Awaitable[Reply | Stream]]


def frame(
    event: str, payload: Any, *, position: int | None = None, envelope: bool = False
) -> bytes:
    """One SSE frame; `envelope` wraps the payload as a durable event."""
    data = {"type": event, "position": position or 0, "payload": payload} if envelope else payload
    head = f"id: {position}\n" if position is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def answer(
    content: str,
    *,
    elements: list[dict[str, Any]] | None = None,
    citations: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
    state: str = "idle",
) -> list[Any]:
    """The frames of an ordinary turn: (tool output), deltas, model output, status."""
    frames: list[Any] = [frame("opened", {"agent": "x"})]
    if elements is not None:
        frames.append(frame("tool_output", {"call_id": "call-1", "elements": elements}))
    frames.append(frame("delta", {"text": content[:5]}))
    output: dict[str, Any] = {"content": content, "citations": citations or []}
    if usage is not None:
        output["usage"] = usage
    frames.append(frame("model_output", output))
    frames.append(frame("status", {"state": state}))
    return frames


def problem(status: int, code: str | None = None, detail: str = "", **headers: str) -> Reply:
    """An application/problem+json error response."""
    body: dict[str, Any] = {"status": status, "detail": detail}
    if code is not None:
        body["code"] = code
    headers = {"Content-Type": "application/problem+json", **headers}
    return Reply(status, body, {key.replace("_", "-"): value for key, value in headers.items()})


class Server:
    """A tiny HTTP/1.1 server whose every response comes from `handler`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.open_streams = 0
        self.max_open_streams = 0
        self.url = ""
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while (request := await self._read(reader)) is not None:
                self.requests.append(request)
                response = await self.handler(request)
                if isinstance(response, Reply):
                    await self._reply(writer, response)
                elif not await self._stream(reader, writer, response):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.transport.abort()

    async def _read(self, reader: asyncio.StreamReader) -> Request | None:
        line = await reader.readline()
        if not line.strip():
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        at = asyncio.get_running_loop().time()
        return Request(method, target.split("?")[0], headers, body, at)

    @staticmethod
    def _head(status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} X"] + [f"{key}: {value}" for key, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _reply(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        body = reply.body
        headers = dict(reply.headers)
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        headers["Content-Length"] = str(len(body))
        writer.write(self._head(reply.status, headers) + body)
        await writer.drain()

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: Stream
    ) -> bool:
        """Send a stream; False when the connection is done for."""
        headers = {"Content-Type": "text/event-stream", **stream.headers}
        headers["Transfer-Encoding" if stream.chunked else "Connection"] = (
            "chunked" if stream.chunked else "close"
        )
        self.open_streams += 1
        self.max_open_streams = max(self.max_open_streams, self.open_streams)
        try:
            writer.write(self._head(stream.status, headers))
            await writer.drain()
            for item in stream.items:
                if isinstance(item, Pause):
                    await asyncio.sleep(item.seconds)
                elif item == CUT:
                    return False
                elif item == HANG:
                    with contextlib.suppress(ConnectionError):
                        await reader.read()
                    return False
                else:
                    writer.write(b"%x\r\n%s\r\n" % (len(item), item) if stream.chunked else item)
                    await writer.drain()
            if not stream.chunked:
                return False
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        finally:
            self.open_streams -= 1


@dataclass
class FakeThread:
    """A thread of the fake API: its id, the opening body, and the texts sent to it."""

    id: str
    opening: dict[str, Any]
    texts: list[str] = field(default_factory=list)


Script = Callable[[FakeThread, str], list[Any]]


def echo(thread: FakeThread, text: str) -> list[Any]:
    return answer(f"antwoord {len(thread.texts)} op {text}")


class FakeSoev:
    """The soev thread API, scripted: `script(thread, text)` gives each turn's stream items.

    `queue(route, response)` makes the next request of a route (`open`, `input` or `delete`)
    get `response` instead; an `open` answered so opens no thread.
    """

    def __init__(self) -> None:
        self.script: Script = echo
        self.threads: dict[str, FakeThread] = {}
        self.deleted: list[str] = []
        self.server = Server(self.handle)
        self._queued: dict[str, deque[Reply | Stream]] = {}
        self._count = 0

    @property
    def requests(self) -> list[Request]:
        return self.server.requests

    def queue(self, route: str, *responses: Reply | Stream) -> None:
        self._queued.setdefault(route, deque()).extend(responses)

    def routed(self, route: str) -> list[Request]:
        return [request for request in self.requests if self._route(request)[0] == route]

    @staticmethod
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

    async def handle(self, request: Request) -> Reply | Stream:
        route, thread_id = self._route(request)
        queued = self._queued.get(route)
        if queued:
            return queued.popleft()
        if route == "open":
            self._count += 1
            body = request.json()
            thread = FakeThread(f"thread-{self._count}", body, [body["input"]["text"]])
            self.threads[thread.id] = thread
            items = self.script(thread, thread.texts[-1])
            return Stream(items, status=201, headers={"X-Soev-Thread-Id": thread.id})
        thread = self.threads.get(thread_id)
        if route == "input" and thread is not None:
            thread.texts.append(request.json()["input"]["text"])
            return Stream(self.script(thread, thread.texts[-1]))
        if route == "delete" and thread is not None:
            del self.threads[thread_id]
            self.deleted.append(thread_id)
            return Reply(204)
        return problem(404, "not_found", "no such thread")


def make_case(
    *turns: str, variants: tuple[tuple[str, ...], ...] = (), case_id: str = "c-1"
) -> Case:
    return Case.model_validate(
        {
            "id": case_id,
            "suite": "kern",
            "split": "dev",
            "turns": list(turns),
            "variants": [
                {"id": f"{case_id}-{index}", "turns": list(texts)}
                for index, texts in enumerate(variants)
            ],
        }
    )


def system_for(url: str, **overrides: Any) -> SystemConfig:
    settings: dict[str, Any] = {
        "base_url": url,
        "agent": "wetwijzer",
        "timeout_s": 5,
        "concurrency": 4,
        "max_retries": 2,
    }
    return SystemConfig.model_validate({**settings, **overrides})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kit() -> Any:
    """This module: frames, responses, the fake and the case and system builders."""
    return sys.modules[__name__]


@pytest.fixture
async def soev(anyio_backend: str) -> Any:
    fake = FakeSoev()
    await fake.server.start()
    yield fake
    await fake.server.stop()
