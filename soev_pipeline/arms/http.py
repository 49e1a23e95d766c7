"""The HTTP client of the system under test, and the retry rules every arm shares.

A turn is retried only while it is safe to repeat: the thread API has no idempotency key,
so a request is sent again only when the system cannot have started the turn (the
connection failed) or said it did not (429, 502, 503, 504). Once a 2xx response has begun,
nothing is retried. The client, the retry loop, the backoff and the reading of
`Retry-After` are those of `soev_pipeline.core.http`, which the judge's client uses too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import RetryPolicy, RetryRules, create_client, send_with_retries
from soev_pipeline.core.models import Failure
from soev_pipeline.core.project import SystemConfig
from soev_pipeline.core.proxies import EnvironmentProxies, ProxyConfigError
from soev_pipeline.core.secrets import redact
from soev_pipeline.core.transport import AiohttpTransport
from soev_pipeline.text import shorten

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_RULES = RetryRules(
    status=lambda status: status in RETRY_STATUSES,
    errors=(httpx.ConnectError, httpx.ConnectTimeout),
)
"""A failed connection, or a status that says the turn did not start; a long `Retry-After`
is waited out up to its cap."""
MAX_DETAIL = 300
_MAX_ERROR_BODY = 16 * 1024


FAILURE_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
"""A failure code the system may give: a short token, safe in a report and on a terminal."""


class TurnFailed(Exception):
    """A turn failed; the arm records `failure` in the evidence instead of raising.

    The detail may quote what the system sent: every secret in it is redacted before it is
    cut to `MAX_DETAIL` characters, since a secret cut first would leave its start behind.
    """

    def __init__(self, code: str, detail: str = "", *, http_status: int | None = None) -> None:
        super().__init__(code)
        self.failure = Failure(
            code=code, detail=shorten(redact(detail), MAX_DETAIL), http_status=http_status
        )


def failure_code(value: object, fallback: str) -> str:
    """`value` when it is a failure code the system may give (`FAILURE_CODE`), else `fallback`."""
    return value if isinstance(value, str) and FAILURE_CODE.fullmatch(value) else fallback


@contextmanager
def reading(body: str) -> Iterator[None]:
    """Turn a stall or a broken connection while the `body` comes in into a failed turn.

    Once a 2xx response has begun nothing is retried, so these end the turn: `timeout`
    when the body stalls, `stream_ended` when the connection breaks mid-`body`.
    """
    try:
        yield
    except httpx.TimeoutException as exc:
        raise TurnFailed("timeout", f"the {body} stalled ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise TurnFailed(
            "stream_ended", f"the connection broke mid-{body} ({type(exc).__name__})"
        ) from exc


def create_http_client(
    system: SystemConfig, *, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """Open the client of the system under test; use it with `async with`.

    It is `core.http.create_client`'s for the `system:` section, sending through aiohttp
    (`core.transport`) and the proxies of the environment (`core.proxies`) unless
    `transport` is given. The pool holds twice `concurrency` connections, so that the
    best-effort deletes of cancelled conversations never wait behind the conversations that
    replace them.

    Raises:
        ArmError: `api_key_env`, or a `${VAR}` in `headers`, names an unset variable; or the
            environment names a proxy that is not an HTTP proxy.
    """
    limits = httpx.Limits(
        max_connections=2 * system.concurrency, max_keepalive_connections=system.concurrency
    )
    if transport is None:
        try:
            proxies = EnvironmentProxies.read()
        except ProxyConfigError as exc:
            raise ArmError(str(exc)) from None
        transport = AiohttpTransport(limits=limits, proxies=proxies)
    return create_client(
        system, section="system", error=ArmError, limits=limits, transport=transport
    )


async def send(
    http: httpx.AsyncClient,
    request: httpx.Request,
    *,
    max_retries: int,
    policy: RetryPolicy,
    deadline: float,
) -> httpx.Response:
    """Send `request`, retrying what is safe to repeat, and return its 2xx streaming response.

    The caller reads and closes the response. A retry waits the jittered backoff or the
    capped `Retry-After`; it is not tried when that wait would pass `deadline` (a
    `loop.time()`), and the last failure is reported instead. A read timeout or another
    broken exchange is not retried: the system may have started the turn.

    Raises:
        TurnFailed: the request failed for good.
    """
    try:
        sent = await send_with_retries(
            lambda: http.send(request, stream=True),
            rules=RETRY_RULES,
            policy=policy,
            max_retries=max_retries,
            deadline=deadline,
        )
    except httpx.TimeoutException as exc:
        raise TurnFailed("timeout", f"no response in time ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise TurnFailed("protocol_error", f"{type(exc).__name__}: {exc}") from exc
    last = sent.last
    if isinstance(last, httpx.ConnectTimeout):
        raise TurnFailed("connect_error", "connecting to the system timed out") from last
    if isinstance(last, httpx.HTTPError):
        raise TurnFailed("connect_error", f"cannot connect to the system: {last}") from last
    if last.is_success:
        return last
    raise await failure_of(last)


async def failure_of(response: httpx.Response) -> TurnFailed:
    """The failure that an error response stands for; reads a bounded part and closes it.

    The code is the problem+json `code` (or an OpenAI-style `error.code`), else
    `http_<status>`; the detail starts with the status and quotes the body's own detail.
    The status is kept on the failure too: a 503 whose body names its own code still did
    not run (`run.unrun`).
    """
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= _MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass
    finally:
        await response.aclose()
    code, detail = _problem(bytes(body))
    status = response.status_code
    text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    return TurnFailed(failure_code(code, f"http_{status}"), text, http_status=status)


def _problem(body: bytes) -> tuple[str | None, str]:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return None, ""
    if not isinstance(data, dict):
        return None, ""
    nested = data.get("error")
    source: dict[str, Any] = nested if isinstance(nested, dict) else data
    code = source.get("code")
    detail = source.get("detail") or source.get("message") or source.get("title") or ""
    return (
        code if isinstance(code, str) and code else None,
        detail if isinstance(detail, str) else "",
    )
