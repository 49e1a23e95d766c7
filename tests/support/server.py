"""The HTTP layer under the fakes of `tests/support`: one scripted server, two ways to reach it.

A fake subclasses `FakeServer` and answers each recorded `Request` in `handle` with a
`Response` or a `Stream`. `start()` (or `with`) serves it on 127.0.0.1 from a thread of its
own, so that sync tests, async tests and the CLI (which runs its own event loop) can all
call it; `transport()` gives the same handler as an `httpx.MockTransport` where no socket is
needed. The socket server speaks just enough HTTP/1.1 to misbehave on purpose: pause a
stream, cut it mid-frame, or hang until the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Self

import httpx

HOST = "127.0.0.1"
NOWHERE = f"http://{HOST}:9/"
"""A base URL for clients over `transport()`: it is never dialled."""


@dataclass
class Request:
    """A request as the fake received it; header names are lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    """When it arrived, by the clock of the loop that received it (`loop.time()`)."""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Response:
    """A whole response; a body that is not bytes is sent as JSON."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait this long before answering."""

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        body = self.body
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        return body, headers


@dataclass(frozen=True)
class Pause:
    """Wait this long before the next item of a stream."""

    seconds: float


CUT = "cut"
"""Close the connection at once, whatever the body still owes."""
HANG = "hang"
"""Send nothing more until the client closes the connection."""


@dataclass
class Stream:
    """A streamed response: bytes go out as they come, `Pause`, `CUT` and `HANG` act."""

    items: Iterable[Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = True
    """Without chunked encoding the body ends when the connection closes."""
    delay_s: float = 0.0
    done: Callable[[], None] | None = None
    """Called once the stream is over, however it ended."""


Answer = Response | Stream


def problem(status: int, code: str | None = None, detail: str = "", **headers: str) -> Response:
    """An `application/problem+json` error; `Retry_After="1"` becomes a `Retry-After` header."""
    body: dict[str, Any] = {"status": status, "detail": detail}
    if code is not None:
        body["code"] = code
    named = {key.replace("_", "-"): value for key, value in headers.items()}
    return Response(status, body, {"Content-Type": "application/problem+json", **named})


class FakeServer:
    """Records every request and answers it with `handle`, on a socket or a MockTransport."""

    base_path = "/"

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.open_streams = 0
        self.max_open_streams = 0
        self.errors: list[BaseException] = []
        self._address = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def handle(self, request: Request) -> Answer:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The base URL of the running server, ending in `/`."""
        assert self._address, "the fake is not started"
        return self._address + self.base_path

    # ------------------------------------------------------------------ the socket

    def start(self) -> Self:
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, HOST, 0))
            port = self._server.sockets[0].getsockname()[1]
            self._address = f"http://{HOST}:{port}"
            ready.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name=type(self).__name__, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def close(self) -> None:
        """Stop serving; raise what the handler raised, so a broken script fails its test."""
        if self._loop is None or self._thread is None:
            return
        if not self._loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()
        if self.errors:
            raise self.errors[0]

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _stop(self) -> None:
        assert self._server is not None
        await stop_serving(self._server, self._connections)

    def _record(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Request:
        at = asyncio.get_running_loop().time()
        request = Request(method, path.split("?")[0], headers, body, at)
        self.requests.append(request)
        return request

    async def _answer(self, request: Request) -> Answer:
        answer = await self.handle(request)
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        return answer

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while (request := await self._read(reader)) is not None:
                self._enter()
                try:
                    answer = await self._answer(request)
                    if isinstance(answer, Response):
                        await self._reply(writer, answer)
                    elif not await self._stream(reader, writer, answer):
                        break
                finally:
                    self._leave()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception as exc:  # a broken script: the client sees the connection close
            self.errors.append(exc)
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
        return self._record(method, target, headers, body)

    @staticmethod
    def _head(status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} X"] + [f"{key}: {value}" for key, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _reply(self, writer: asyncio.StreamWriter, response: Response) -> None:
        body, headers = response.encoded()
        headers["Content-Length"] = str(len(body))
        writer.write(self._head(response.status, headers) + body)
        await writer.drain()

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: Stream
    ) -> bool:
        """Send a stream; False when the connection is done for."""
        headers = {"Content-Type": "text/event-stream", **stream.headers}
        if stream.chunked:
            headers["Transfer-Encoding"] = "chunked"
        else:
            headers["Connection"] = "close"
        self._opened()
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
            self._closed(stream)

    # ------------------------------------------------------------------ the MockTransport

    def transport(self) -> httpx.MockTransport:
        """The same fake for an `httpx.AsyncClient`, without a socket (use base URL `NOWHERE`).

        A `CUT` raises what httpx raises for a connection closed mid-body; a `HANG` waits
        until the client gives up. httpx's own timeouts do not apply to a MockTransport.
        """
        return httpx.MockTransport(self._mock)

    async def _mock(self, incoming: httpx.Request) -> httpx.Response:
        body = await incoming.aread()
        headers = {key.lower(): value for key, value in incoming.headers.items()}
        request = self._record(incoming.method, incoming.url.path, headers, body)
        self._enter()
        try:
            answer = await self._answer(request)
        finally:
            self._leave()
        if isinstance(answer, Response):
            content, headers = answer.encoded()
            return httpx.Response(answer.status, headers=headers, content=content)
        headers = {"Content-Type": "text/event-stream", **answer.headers}
        return httpx.Response(answer.status, headers=headers, stream=_Body(self._mock_body(answer)))

    async def _mock_body(self, stream: Stream) -> AsyncGenerator[bytes, None]:
        self._opened()
        try:
            for item in stream.items:
                if isinstance(item, Pause):
                    await asyncio.sleep(item.seconds)
                elif item == CUT:
                    if stream.chunked:
                        raise httpx.RemoteProtocolError("peer closed connection mid-body")
                    return
                elif item == HANG:
                    await asyncio.Event().wait()
                else:
                    yield item
        finally:
            self._closed(stream)

    # ------------------------------------------------------------------ counting

    def _enter(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        self.in_flight -= 1

    def _opened(self) -> None:
        self.open_streams += 1
        self.max_open_streams = max(self.max_open_streams, self.open_streams)

    def _closed(self, stream: Stream) -> None:
        self.open_streams -= 1
        if stream.done is not None:
            stream.done()


async def stop_serving(server: asyncio.Server, connections: set[asyncio.Task[None]]) -> None:
    """Close `server` and end the tasks that serve its connections, `connections`."""
    for _ in range(10):  # let a connection made just now be accepted, so that it can close
        await asyncio.sleep(0)
    server.close()
    for task in list(connections):
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)
    await server.wait_closed()


class _Body(httpx.AsyncByteStream):
    """A streamed body that a closed response stops, as a closed connection would."""

    def __init__(self, chunks: AsyncGenerator[bytes, None]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._chunks.aclose()
