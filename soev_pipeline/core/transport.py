"""An httpx transport that sends through aiohttp's client.

httpx gives the project its requests, responses, timeouts and test transports; its own
connection pool (httpcore on anyio) costs several milliseconds of CPU per streamed turn
(every request scans the pool and asks each idle socket whether it is readable), which at
high concurrency makes the harness, not the system, the bottleneck. aiohttp's client
parses HTTP in C and keeps its pool in a dict. This transport puts it under an
`httpx.AsyncClient`: the client's code, its hooks and `httpx.MockTransport` in tests stay as
they are, and aiohttp's errors become the httpx errors they stand for, so that the retry
rules (`core.http.RetryRules`) see the same failures: only a connection that could not be
made is safe to retry.

The client keeps what only it does: cookies, redirects (never followed here), content
decoding. Proxies from the environment it cannot keep: httpx reads them only for a client
without a transport of its own. So this transport takes them (`core.proxies`) and sends
each request through the proxy its URL needs, as httpx would.
"""

from __future__ import annotations

import functools
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx

from .proxies import EnvironmentProxies

if TYPE_CHECKING:  # aiohttp is imported with the first request: a tenth of a second
    import aiohttp

MAX_HEADER_BYTES = 64 * 1024
"""The longest status line or header aiohttp reads; aiohttp's own default is 8 KiB."""
CHUNK_BYTES = 64 * 1024
_DEFAULT_LIMITS = httpx.Limits()


@functools.cache
def _errors() -> tuple[tuple[type[BaseException], type[httpx.TransportError]], ...]:
    """(aiohttp error, httpx error), most specific first: the first that matches is raised."""
    import aiohttp

    return (
        (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),  # connecting, or waiting
        (aiohttp.SocketTimeoutError, httpx.ReadTimeout),  # no bytes for the read timeout
        (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
        (aiohttp.ClientConnectorError, httpx.ConnectError),  # refused, unreachable, DNS, TLS
        (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),  # closed mid-exchange
        (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),  # a body cut or malformed
        (aiohttp.ClientResponseError, httpx.RemoteProtocolError),  # not a valid HTTP response
        (aiohttp.InvalidURL, httpx.UnsupportedProtocol),
        (aiohttp.ClientOSError, httpx.ReadError),  # reset or broken after connecting
        (aiohttp.ClientConnectionError, httpx.NetworkError),
        (aiohttp.ClientError, httpx.TransportError),
    )


@functools.cache
def _resent_errors() -> tuple[type[aiohttp.ClientError], ...]:
    """The errors on which aiohttp sends a GET, PUT or DELETE again, once."""
    import aiohttp

    return (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)


class _NotResent(Exception):
    """An error of sending, carried past aiohttp's own retry (`_send_once`)."""

    def __init__(self, error: aiohttp.ClientError) -> None:
        super().__init__(error)
        self.error = error


async def _send_once(
    request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
) -> aiohttp.ClientResponse:
    """A middleware that keeps aiohttp from sending a request again.

    aiohttp sends a GET, PUT or DELETE again, once, when the server closes the connection
    without an answer; httpx does not, and the retry rules decide alone. aiohttp's retry
    sees what its middlewares raise: this one wraps those errors, `_httpx_errors` unwraps
    them.
    """
    try:
        return await handler(request)
    except _resent_errors() as exc:
        raise _NotResent(exc) from exc


@contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    import aiohttp

    try:
        yield
    except (aiohttp.ClientError, _NotResent) as raised:
        exc = raised.error if isinstance(raised, _NotResent) else raised
        for source, target in _errors():
            if isinstance(exc, source):
                raise target(str(exc) or type(exc).__name__, request=request) from exc
        raise  # pragma: no cover - the last pair matches every ClientError


def prepare() -> None:
    """Import aiohttp and make the default TLS context ahead of the first request: a tenth
    of a second or more (aiohttp makes two TLS contexts of its own as it is imported), which
    `soev-evals run` spends on a thread while it loads the project."""
    import aiohttp  # noqa: F401

    default_tls_context()


_TLS_LOCK = threading.Lock()


def default_tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's authorities, or SSL_CERT_FILE's), made once a
    process: reading the certificates takes 20 to 40 ms, and every client opens a session.
    A second caller waits for the first (`prepare`'s thread, the first request) rather
    than reading them again beside it."""
    with _TLS_LOCK:
        return _tls_context()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class _ResponseStream(httpx.AsyncByteStream):
    """The body of an aiohttp response, chunk by chunk as it arrives."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors(self._request):
            while chunk := await self._response.content.read(CHUNK_BYTES):
                yield chunk

    async def aclose(self) -> None:
        response = self._response
        if response.content.at_eof():
            response.release()  # the connection goes back to the pool
        else:
            response.close()  # a body left unread: the connection cannot be reused


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends an `httpx.AsyncClient`'s requests with one `aiohttp.ClientSession`.

    The session is made on the first request, in the event loop of the client, and closed
    with the client. HTTP/1.1 only, as the thread API needs; the request's timeouts apply
    as httpx defines them (connect, read between chunks, pool); aiohttp has no write
    timeout.

    Args:
        limits: the most connections, and how long an idle one is kept.
        verify: how to check the server's TLS certificate, as httpx's `verify`.
        proxies: the proxies to send through (`EnvironmentProxies.read()`); None for none.
    """

    def __init__(
        self,
        *,
        limits: httpx.Limits = _DEFAULT_LIMITS,
        verify: ssl.SSLContext | bool = True,
        proxies: EnvironmentProxies | None = None,
    ) -> None:
        self._limits = limits
        self._verify = verify
        self._proxies = proxies or EnvironmentProxies()
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        if isinstance(self._verify, ssl.SSLContext):
            context = self._verify
        elif self._verify:
            context = default_tls_context()
        else:
            context = httpx.create_ssl_context(verify=False)
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0,
            limit_per_host=0,
            keepalive_timeout=self._limits.keepalive_expiry or 0,
            ssl=context,
        )
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # the httpx client keeps the cookies
            auto_decompress=False,  # and decodes the content
            trust_env=False,  # the proxies come from `proxies`; no .netrc is read
            timeout=aiohttp.ClientTimeout(total=None),
            max_line_size=MAX_HEADER_BYTES,
            max_field_size=MAX_HEADER_BYTES,
            middlewares=(_send_once,),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = self._open()
        timeouts = request.extensions.get("timeout", {})
        connect, read, pool = (timeouts.get(name) for name in ("connect", "read", "pool"))
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=None if connect is None or pool is None else connect + pool,
            sock_connect=connect,
            sock_read=read,
        )
        data: Any
        try:
            data = request.content or None
        except httpx.RequestNotRead:
            data = request.stream
            request.headers.pop("transfer-encoding", None)  # aiohttp chunks it itself
        with _httpx_errors(request):
            # the credentials of a URL are httpx's to send (as `Authorization: Basic`)
            target = request.url.copy_with(userinfo=b"") if request.url.userinfo else request.url
            url = str(target)
            response = await self._session.request(
                request.method,
                url,
                proxy=self._proxies.for_url(url),
                headers=[
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                ],
                data=data,
                allow_redirects=False,
                timeout=timeout,
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
            )
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_ResponseStream(response, request),
            request=request,
            extensions=extensions,
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
