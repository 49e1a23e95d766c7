"""The viewer's HTTP server: uvicorn, with a deadline on each request's headers.

uvicorn closes a keep-alive connection that stays idle, but not one that sends half a
request's headers and then waits: a few hundred such sockets hold the viewer's
connections open for as long as their sender likes. Here every request must finish its
headers within `HEADER_TIMEOUT` seconds of its first byte (or of the connection, for the
first request), or the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT = 10.0
"""Seconds a request may take to send its headers: a browser needs milliseconds."""


class _HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers do not
    arrive within `header_timeout` seconds."""

    header_timeout = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self._disarm()  # the keep-alive timeout of uvicorn takes over until the next request
        super().on_response_complete()


def make_server(app: ASGIApp, *, header_timeout: float = HEADER_TIMEOUT) -> uvicorn.Server:
    """The uvicorn server of `app`, whose requests must send their headers within
    `header_timeout` seconds; `run(sockets=[sock])` serves until it is told to stop."""
    protocol = type("HeaderDeadline", (_HeaderDeadline,), {"header_timeout": header_timeout})
    config = uvicorn.Config(
        app, http=protocol, log_level="warning", access_log=False, lifespan="off"
    )
    return uvicorn.Server(config)
