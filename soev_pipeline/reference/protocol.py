"""Just enough HTTP/1.1 for the thread API: requests in, JSON and event streams out.

The standard library has no asyncio HTTP server, and `http.server` spends a thread per
connection; a benchmark at concurrency 32 with keep-alive connections wants one event
loop. The subset here is what an HTTP client sends to a JSON API: a request line,
headers, a body by Content-Length or chunked, keep-alive. Event streams go out chunked,
so the connection stays usable for the next request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

MAX_HEAD = 64 * 1024
"""The longest request head, and the longest line of a chunked body, a connection reads."""
MAX_BODY = 1024 * 1024


class BadRequest(Exception):
    """The bytes on the connection are not an HTTP request this server can read."""


@dataclass(frozen=True)
class Request:
    """One request: header names are lower case; `path` has no query string."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    keep_alive: bool


@dataclass(frozen=True)
class Response:
    """A complete response with a body."""

    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EventStream:
    """A response whose body is a server-sent event stream, written as it is produced."""

    status: int
    frames: AsyncIterator[bytes]
    headers: Mapping[str, str] = field(default_factory=dict)


def json_response(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Response:
    body = json.dumps(payload, ensure_ascii=False).encode()
    return Response(status, body, "application/json", headers or {})


def problem(status: int, code: str, detail: str) -> Response:
    """An `application/problem+json` error: `{status, code, detail}`."""
    body = json.dumps({"status": status, "code": code, "detail": detail}).encode()
    return Response(status, body, "application/problem+json")


def sse_frame(position: int, event: str, data: Mapping[str, Any]) -> bytes:
    """One server-sent event: `id: <position>`, `event: <type>`, `data: <json>`."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {position}\nevent: {event}\ndata: {payload}\n\n".encode()


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """Read one request, or return None when the client closed the connection between requests.

    Raises:
        BadRequest: the request is malformed or too large.
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest("the connection closed inside the request head") from None
    except asyncio.LimitOverrunError:
        raise BadRequest("the request head is too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("the request line is not HTTP/1.x")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise BadRequest("a header line has no colon")
        headers[name.strip().lower()] = value.strip()
    body = await _read_body(reader, headers)
    connection = headers.get("connection", "").lower()
    keep_alive = connection == "keep-alive" if version == "HTTP/1.0" else connection != "close"
    return Request(method.upper(), target.split("?", 1)[0], headers, body, keep_alive)


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    try:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            size = 0
            while True:
                length = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                size += length
                if size > MAX_BODY:
                    raise BadRequest("the request body is too large")
                if length == 0:
                    await reader.readuntil(b"\r\n")
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(length))
                await reader.readexactly(2)
        length = int(headers.get("content-length", "0"))
    except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise BadRequest("the request body is malformed") from None
    if length < 0 or length > MAX_BODY:
        raise BadRequest("the request body is too large")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise BadRequest("the connection closed inside the request body") from None


def _head(status: int, headers: Mapping[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write_response(
    writer: asyncio.StreamWriter, response: Response | EventStream, *, keep_alive: bool
) -> None:
    """Write `response`; an event stream is sent chunk by chunk as its frames come.

    When the client goes away in the middle of a stream, the stream's generator is
    closed, so a turn in progress can put its thread back to idle.
    """
    connection = "keep-alive" if keep_alive else "close"
    if isinstance(response, Response):
        headers = dict(response.headers)
        if response.status != 204:
            headers["Content-Length"] = str(len(response.body))
        if response.content_type:
            headers["Content-Type"] = response.content_type
        writer.write(_head(response.status, {**headers, "Connection": connection}))
        writer.write(response.body)
        await writer.drain()
        return
    headers = {
        **response.headers,
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "Transfer-Encoding": "chunked",
        "Connection": connection,
    }
    writer.write(_head(response.status, headers))
    frames = response.frames
    try:
        async for frame in frames:
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    finally:
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()
