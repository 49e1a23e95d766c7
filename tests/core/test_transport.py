"""AiohttpTransport against raw HTTP/1.1 servers on 127.0.0.1: what reaches the server, what
comes back, streaming, keep-alive, the aiohttp errors as httpx errors, cookies and redirects
left to the client, and the session closed with the client. Each server writes its bytes by
hand, so that a test controls exactly what the transport has to read."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import ssl
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx
import pytest

from soev_pipeline.core.transport import MAX_HEADER_BYTES, AiohttpTransport, default_tls_context

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1"
HANG_S = 60.0
"""How long a test waits for what should happen at once before it fails rather than hangs:
a guard against a hang, never the measure of a pass (a loaded machine may be slow)."""
CLOSING_S = 2.0
"""How long a server lets its handlers end when it closes, before it cancels them."""
TIMEOUT = httpx.Timeout(5.0)
READ_TIMEOUT = httpx.Timeout(5.0, read=0.2)


@dataclass
class Received:
    """A request as the server read it: header names as sent, in order."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


@dataclass
class Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    server: RawServer
    number: int

    async def request(self) -> Received | None:
        """The next request on the connection, or None when the client closed it."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.server.closed_by_client.append(self.number)
            return None
        line, *lines = head[:-4].decode("latin-1").split("\r\n")
        method, target, _ = line.split(" ")
        headers = [(name, value.strip()) for name, value in (item.split(":", 1) for item in lines)]
        received = Received(method, target, headers, b"")
        if length := received.header("content-length"):
            received.body = await self.reader.readexactly(int(length[0]))
        self.server.received.append(received)
        return received

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def until_closed(self) -> None:
        """Send nothing more, until the client closes the connection."""
        await self.reader.read()
        self.server.closed_by_client.append(self.number)


Handler = Callable[[Connection], Awaitable[None]]


@dataclass
class RawServer:
    """Serves each connection with `handler` and counts the connections."""

    handler: Handler
    connections: int = 0
    received: list[Received] = field(default_factory=list)
    closed_by_client: list[int] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _connections: list[Connection] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._port}"

    @property
    def paths(self) -> list[str]:
        return [request.target for request in self.received]

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, HOST, 0)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for connection in self._connections:  # a handler waiting on the client sees EOF
            connection.writer.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=CLOSING_S)
        for task in self._tasks:  # only a handler still waiting on its test
            task.cancel()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        connection = Connection(reader, writer, self, self.connections)
        self._connections.append(connection)
        try:
            await self.handler(connection)
        finally:
            writer.close()
            self._tasks.discard(task)


def response(
    status: str = "200 OK", headers: Sequence[tuple[str, str]] = (), body: bytes = b""
) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers)]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def answer_all(data: bytes) -> Handler:
    """Answer every request of a connection with `data`, keeping the connection open."""

    async def handle(connection: Connection) -> None:
        while await connection.request() is not None:
            await connection.send(data)

    return handle


async def eventually(condition: Callable[[], object]) -> None:
    """Wait until `condition()` holds (failing after `HANG_S`)."""
    async with asyncio.timeout(HANG_S):
        while not condition():
            await asyncio.sleep(0.01)


def client(server: RawServer, timeout: httpx.Timeout = TIMEOUT) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=AiohttpTransport(), base_url=server.url, timeout=timeout)


async def test_a_request_and_its_response_pass_as_with_httpx_own_transport() -> None:
    data = response(
        "201 Made Here",
        [("Content-Type", "application/json"), ("X-Tag", "one"), ("X-Tag", "two")],
        b'{"id": 7}',
    )
    async with RawServer(answer_all(data)) as server:
        results: list[tuple[object, ...]] = []
        transports: list[httpx.AsyncBaseTransport | None] = [None, AiohttpTransport()]
        for transport in transports:
            async with httpx.AsyncClient(transport=transport, base_url=server.url) as http:
                got = await http.post(
                    "/api/items",
                    params={"q": "a b", "n": "1"},
                    headers={"X-Custom": "yes"},
                    json={"text": "héllo"},
                )
                results.append(
                    (
                        got.status_code,
                        got.reason_phrase,
                        got.http_version,
                        got.headers.multi_items(),
                        got.content,
                    )
                )
                user_agent = http.headers["user-agent"]

    assert results[0] == results[1]
    assert results[1] == (
        201,
        "Made Here",
        "HTTP/1.1",
        [
            ("content-type", "application/json"),
            ("x-tag", "one"),
            ("x-tag", "two"),
            ("content-length", "9"),
        ],
        b'{"id": 7}',
    )
    default, ours = server.received
    assert (ours.method, ours.target, ours.body) == (default.method, default.target, default.body)
    assert (ours.method, ours.target) == ("POST", "/api/items?q=a+b&n=1")
    assert ours.body == '{"text":"héllo"}'.encode()
    assert ours.headers == default.headers  # the same names, in the same case and order
    assert ours.header("X-Custom") == ["yes"]
    assert ours.header("User-Agent") == [user_agent]
    assert ours.header("Content-Type") == ["application/json"]


async def test_a_streamed_body_arrives_chunk_by_chunk() -> None:
    release = asyncio.Event()

    async def handle(connection: Connection) -> None:
        await connection.request()
        await connection.send(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n"
        )
        await release.wait()
        await connection.send(b"6\r\nsecond\r\n0\r\n\r\n")

    async with (
        RawServer(handle) as server,
        client(server) as http,
        http.stream("GET", "/stream") as got,
    ):
        chunks = got.aiter_raw()
        first = await asyncio.wait_for(anext(chunks), HANG_S)  # the server still holds back
        release.set()
        rest = [chunk async for chunk in chunks]

    assert first == b"first"
    assert b"".join(rest) == b"second"


async def test_a_connection_is_kept_alive_after_a_body_read_to_its_end() -> None:
    async with RawServer(answer_all(response(body=b"hello"))) as server, client(server) as http:
        first = await http.get("/one")
        second = await http.get("/two")

    assert (first.content, second.content) == (b"hello", b"hello")
    assert server.paths == ["/one", "/two"]
    assert server.connections == 1


async def test_a_body_left_unread_closes_its_connection_and_the_next_request_works() -> None:
    async def handle(connection: Connection) -> None:
        request = await connection.request()
        assert request is not None
        if request.target == "/big":
            await connection.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npart")
            await connection.until_closed()
        else:
            await connection.send(response(body=b"small"))
            await answer_all(response(body=b"small"))(connection)

    async with RawServer(handle) as server, client(server) as http:
        async with http.stream("GET", "/big") as big:
            assert big.status_code == 200
        small = await asyncio.wait_for(http.get("/small"), HANG_S)
        await eventually(lambda: server.closed_by_client)  # the client's close reaches it
        closed = list(server.closed_by_client)

    assert small.content == b"small"
    assert server.paths == ["/big", "/small"]
    assert server.connections == 2
    assert closed == [1]  # the unread one closed, the new one kept


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as probe:  # a port on which nothing listens
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    async with httpx.AsyncClient(
        transport=AiohttpTransport(), base_url=f"http://{HOST}:{port}"
    ) as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.get("/refused")

    assert caught.value.request.url.path == "/refused"


async def close_unanswered(connection: Connection) -> None:
    await connection.request()


async def test_a_connection_closed_without_an_answer_is_a_protocol_error() -> None:
    async with RawServer(close_unanswered) as server, client(server) as http:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await http.post("/silent", json={})

    assert caught.value.request.url.path == "/silent"
    assert server.connections == 1  # the request is not sent again


async def test_an_idempotent_request_closed_without_an_answer_is_not_sent_again() -> None:
    async with RawServer(close_unanswered) as server, client(server) as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.delete("/threads/1")

    assert server.paths == ["/threads/1"]


async def test_a_body_that_stalls_is_a_read_timeout_while_reading() -> None:
    async def handle(connection: Connection) -> None:
        await connection.request()
        await connection.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await connection.until_closed()

    async with (
        RawServer(handle) as server,
        client(server, timeout=READ_TIMEOUT) as http,
        http.stream("GET", "/stall") as got,
    ):
        assert got.status_code == 200
        with pytest.raises(httpx.ReadTimeout) as caught:
            async with asyncio.timeout(HANG_S):  # fail, do not hang, without one
                await got.aread()

    assert caught.value.request.url.path == "/stall"


async def test_a_status_line_that_never_comes_is_a_read_timeout() -> None:
    async def handle(connection: Connection) -> None:
        await connection.request()
        await connection.until_closed()

    async with RawServer(handle) as server, client(server, timeout=READ_TIMEOUT) as http:
        with pytest.raises(httpx.ReadTimeout) as caught:
            async with asyncio.timeout(HANG_S):  # fail, do not hang, without one
                await http.get("/mute")

    assert caught.value.request.url.path == "/mute"


async def test_a_chunked_body_cut_short_is_a_protocol_error_while_reading() -> None:
    async def handle(connection: Connection) -> None:
        await connection.request()
        await connection.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc")

    async with (
        RawServer(handle) as server,
        client(server) as http,
        http.stream("GET", "/cut") as got,
    ):
        assert got.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await got.aread()

    assert caught.value.request.url.path == "/cut"


async def test_a_garbage_status_line_is_a_protocol_error() -> None:
    data = b"HTXP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    async with RawServer(answer_all(data)) as server, client(server) as http:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await http.get("/garbage")

    assert caught.value.request.url.path == "/garbage"


async def test_a_header_longer_than_the_limit_is_a_protocol_error() -> None:
    long = response(headers=[("X-Big", "a" * (MAX_HEADER_BYTES + 1))])
    async with RawServer(answer_all(long)) as server, client(server) as http:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await http.get("/long")

    assert caught.value.request.url.path == "/long"


async def test_a_header_of_20_kb_is_read() -> None:
    value = "a" * 20_000  # above aiohttp's default limit of 8 KiB
    data = response(headers=[("X-Big", value)], body=b"ok")
    async with RawServer(answer_all(data)) as server, client(server) as http:
        got = await http.get("/wide")

    assert got.headers["x-big"] == value
    assert got.content == b"ok"


async def test_cookies_are_kept_by_the_client() -> None:
    async def handle(connection: Connection) -> None:
        while (request := await connection.request()) is not None:
            headers = [("Set-Cookie", "session=abc; Path=/")] if request.target == "/login" else []
            await connection.send(response(headers=headers))

    async with RawServer(handle) as server:
        # by a host name: aiohttp's own jar would refuse the cookie of an IP address
        base_url = server.url.replace(HOST, "localhost")
        http = httpx.AsyncClient(transport=AiohttpTransport(), base_url=base_url)
        async with http:
            await http.get("/login")
            await http.get("/me")
            http.cookies.clear()
            await http.get("/me")

    assert server.paths == ["/login", "/me", "/me"]
    login, me, forgotten = server.received
    assert login.header("Cookie") == []
    assert me.header("Cookie") == ["session=abc"]
    assert forgotten.header("Cookie") == []  # aiohttp kept none of its own


async def test_the_credentials_of_a_url_go_as_httpx_sends_them() -> None:
    """httpx turns the userinfo of a URL into `Authorization: Basic`; aiohttp, given the
    same URL, refused to send the request at all."""

    async def handle(connection: Connection) -> None:
        while await connection.request() is not None:
            await connection.send(response())

    async with RawServer(handle) as server:
        base_url = server.url.replace("http://", "http://svc:p%40ss@")
        async with httpx.AsyncClient(transport=AiohttpTransport(), base_url=base_url) as http:
            assert (await http.get("/x", headers={"X-A": "1"})).status_code == 200
            bearer = {"Authorization": "Bearer token-123"}
            assert (await http.get("/y", headers=bearer)).status_code == 200

    first, second = server.received
    assert first.target == "/x"
    assert first.header("Authorization") == ["Basic c3ZjOnBAc3M="]  # svc:p@ss
    assert second.header("Authorization") == ["Basic c3ZjOnBAc3M="]  # as httpx: the URL wins


async def test_a_redirect_is_returned_not_followed() -> None:
    async def handle(connection: Connection) -> None:
        while (request := await connection.request()) is not None:
            if request.target == "/start":
                await connection.send(response("302 Found", [("Location", "/target")]))
            else:
                await connection.send(response(body=b"target"))

    async with RawServer(handle) as server, client(server) as http:
        got = await http.get("/start")

    assert got.status_code == 302
    assert got.headers["location"] == "/target"
    assert server.paths == ["/start"]


async def test_closing_the_client_closes_the_session(caplog: pytest.LogCaptureFixture) -> None:
    async def fresh_request(server: RawServer) -> httpx.Response:
        async with client(server) as http:
            return await http.get("/")

    caplog.set_level(logging.ERROR, logger="asyncio")
    async with RawServer(answer_all(response(body=b"ok"))) as server:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert (await fresh_request(server)).content == b"ok"
            gc.collect()  # a session left unclosed warns when collected
        unclosed = [str(item.message) for item in caught if "Unclosed" in str(item.message)]
        assert unclosed == []
        assert "Unclosed" not in caplog.text
        await eventually(lambda: server.closed_by_client == [1])  # its socket closed too

        assert (await fresh_request(server)).content == b"ok"
        assert server.connections == 2


def test_the_default_tls_context_is_made_once_and_checks_certificates() -> None:
    context = default_tls_context()
    assert default_tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_callers_at_once_make_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up thread and the first request may ask at once: one reads the
    certificates, the other waits for its context."""
    import threading

    from soev_pipeline.core import transport

    made: list[object] = []
    inside = threading.Event()
    release = threading.Event()

    def create_ssl_context() -> object:
        made.append(object())
        inside.set()
        release.wait(30)
        return made[-1]

    transport._tls_context.cache_clear()
    monkeypatch.setattr(transport.httpx, "create_ssl_context", create_ssl_context)
    try:
        contexts: list[object] = []
        first = threading.Thread(target=lambda: contexts.append(default_tls_context()))
        first.start()
        assert inside.wait(30)
        second = threading.Thread(target=lambda: contexts.append(default_tls_context()))
        second.start()
        release.set()
        first.join()
        second.join()
        assert len(made) == 1 and contexts == [made[0], made[0]]
    finally:
        transport._tls_context.cache_clear()


def test_prepare_imports_aiohttp_and_makes_the_tls_context_ahead() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from soev_pipeline.core import transport; "
        "before = 'aiohttp' in sys.modules; transport.prepare(); "
        "made = transport._tls_context.cache_info().currsize; "
        "sys.exit(0 if not before and 'aiohttp' in sys.modules and made == 1 else 1)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
