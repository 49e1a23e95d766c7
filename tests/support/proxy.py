"""A forward HTTP proxy on 127.0.0.1, for the tests of proxies from the environment.

`ForwardProxy()` (used with `with`) forwards what a client sends it as a corporate proxy
does: a request in absolute form (`POST http://host:port/path HTTP/1.1`) goes to its host
in origin form, without the `Proxy-*` headers, and its response comes back framed as it
came (a length, chunks, or the close of the connection), so that a streamed answer streams
through; a `CONNECT host:port` becomes a tunnel. The client's connection stays open for its
next request. `seen` records `"METHOD target"` of every request, and `authorizations` the
`Proxy-Authorization` headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Self
from urllib.parse import urlsplit

from tests.support.server import stop_serving

HOST = "127.0.0.1"


class ForwardProxy:
    """See the module docstring; `url` is `http://127.0.0.1:<port>`."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.authorizations: list[str] = []
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def __enter__(self) -> Self:
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, HOST, 0))
            self.url = f"http://{HOST}:{self._server.sockets[0].getsockname()[1]}"
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="ForwardProxy", daemon=True)
        self._thread.start()
        assert ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._thread is not None
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _stop(self) -> None:
        assert self._server is not None
        await stop_serving(self._server, self._tasks)

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while (head := await _head(client)) is not None:
                line, headers = head
                method, target, _ = line.split(" ", 2)
                self.seen.append(f"{method} {target}")
                auth = [value for name, value in headers if name.lower() == "proxy-authorization"]
                self.authorizations += auth
                if method == "CONNECT":
                    await self._tunnel(target, client, to_client)
                    return
                if not await self._forward(method, target, headers, client, to_client):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            to_client.transport.abort()

    async def _forward(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        client: asyncio.StreamReader,
        to_client: asyncio.StreamWriter,
    ) -> bool:
        """Send one request on and its response back; False when the client's connection is
        done (the response ended with its connection)."""
        url = urlsplit(target)
        length = int(dict((n.lower(), v) for n, v in headers).get("content-length", "0"))
        body = await client.readexactly(length)
        upstream, to_upstream = await asyncio.open_connection(url.hostname, url.port or 80)
        try:
            path = url.path + (f"?{url.query}" if url.query else "")
            kept = [(n, v) for n, v in headers if not n.lower().startswith("proxy-")]
            lines = [f"{method} {path or '/'} HTTP/1.1", *(f"{n}: {v}" for n, v in kept)]
            to_upstream.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            await to_upstream.drain()
            answer = await _head(upstream)
            if answer is None:
                return False
            status_line, answer_headers = answer
            named = {n.lower(): v.lower() for n, v in answer_headers}
            raw = [status_line, *(f"{n}: {v}" for n, v in answer_headers)]
            to_client.write(("\r\n".join(raw) + "\r\n\r\n").encode("latin-1"))
            status = int(status_line.split(" ", 2)[1])
            if method == "HEAD" or status in (204, 304):
                return True
            if named.get("transfer-encoding") == "chunked":
                await _relay_chunks(upstream, to_client)
                return True
            if "content-length" in named:
                to_client.write(await upstream.readexactly(int(named["content-length"])))
                await to_client.drain()
                return True
            while chunk := await upstream.read(65536):  # the body ends with the connection
                to_client.write(chunk)
                await to_client.drain()
            return False
        finally:
            to_upstream.transport.abort()

    async def _tunnel(
        self, target: str, client: asyncio.StreamReader, to_client: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        upstream, to_upstream = await asyncio.open_connection(host.strip("[]"), int(port))
        to_client.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await to_client.drain()
        try:
            await asyncio.gather(_pipe(client, to_upstream), _pipe(upstream, to_client))
        finally:
            to_upstream.transport.abort()


async def _head(reader: asyncio.StreamReader) -> tuple[str, list[tuple[str, str]]] | None:
    """The first line and the headers of a message; None at the end of the connection."""
    line = await reader.readline()
    if not line.strip():
        return None
    headers: list[tuple[str, str]] = []
    while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = raw.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    return line.decode("latin-1").rstrip("\r\n"), headers


async def _relay_chunks(upstream: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
    while True:
        size_line = await upstream.readline()
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        data = await upstream.readexactly(size + 2)  # the chunk and its CRLF
        to_client.write(size_line + data)
        await to_client.drain()
        if size == 0:
            return


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    with contextlib.suppress(OSError):
        sink.write_eof()
