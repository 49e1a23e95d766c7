"""The HTTP client of the system under test, and the retry rules every arm shares.

A turn is retried only while it is safe to repeat: the thread API has no idempotency key,
so a request is sent again only when the system cannot have started the turn (the
connection failed) or said it did not (429, 502, 503, 504). Once a 2xx response has begun,
nothing is retried. The backoff and the reading of `Retry-After` are those of
`soev_pipeline.core.http`, which the judge's client uses too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import USER_AGENT, RetryPolicy, client_timeout, retry_after_seconds
from soev_pipeline.core.models import Failure
from soev_pipeline.core.project import SystemConfig

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_DETAIL = 300
_MAX_ERROR_BODY = 16 * 1024
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TurnFailed(Exception):
    """A turn failed; the arm records `failure` in the evidence instead of raising."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(code)
        self.failure = Failure(code=code, detail=short(detail))


def short(text: str) -> str:
    """Cut a failure detail to a length that keeps evidence lines small."""
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


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


def _expand(name: str, value: str) -> str:
    """Fill in the `${VAR}` references of header `name`; the error names header and variable."""

    def lookup(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in os.environ:
            raise ArmError(
                f"system.headers[{name!r}] uses ${{{variable}}}, but the environment "
                f"variable {variable!r} is not set"
            )
        return os.environ[variable]

    return _ENV_REFERENCE.sub(lookup, value)


def request_headers(system: SystemConfig) -> dict[str, str]:
    """The headers of every request: user agent, the project's headers, the bearer token.

    Raises:
        ArmError: an environment variable that the configuration names is not set.
    """
    headers = {"User-Agent": USER_AGENT}
    headers.update({name: _expand(name, value) for name, value in system.headers.items()})
    if system.api_key_env is not None:
        token = os.environ.get(system.api_key_env)
        if not token:
            raise ArmError(
                f"system.api_key_env names {system.api_key_env!r}, but that environment "
                "variable is not set"
            )
        headers["Authorization"] = f"Bearer {token}"
    return headers


def create_http_client(
    system: SystemConfig, *, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """Open the client of the system under test; use it with `async with`.

    Relative paths join under `system.base_url`; the timeouts are `client_timeout`'s.
    The pool holds twice `concurrency` connections, so that the best-effort deletes of
    cancelled conversations never wait behind the conversations that replace them.

    Raises:
        ArmError: `api_key_env`, or a `${VAR}` in `headers`, names an unset variable.
    """
    limits = httpx.Limits(
        max_connections=2 * system.concurrency, max_keepalive_connections=system.concurrency
    )
    return httpx.AsyncClient(
        base_url=system.url,
        headers=request_headers(system),
        timeout=client_timeout(system.timeout_s),
        limits=limits,
        transport=transport,
        follow_redirects=False,
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
    `loop.time()`), and the last failure is reported instead.

    Raises:
        TurnFailed: the request failed for good.
    """
    loop = asyncio.get_running_loop()
    retry = 0
    while True:
        delay: float | None = None
        try:
            response = await http.send(request, stream=True)
        except httpx.ConnectTimeout:
            failed = TurnFailed("connect_error", "connecting to the system timed out")
        except httpx.ConnectError as exc:
            failed = TurnFailed("connect_error", f"cannot connect to the system: {exc}")
        except httpx.TimeoutException as exc:
            raise TurnFailed("timeout", f"no response in time ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise TurnFailed("protocol_error", f"{type(exc).__name__}: {exc}") from exc
        else:
            if response.is_success:
                return response
            failed = await failure_of(response)
            if response.status_code not in RETRY_STATUSES:
                raise failed
            wait = retry_after_seconds(response.headers.get("retry-after"))
            if wait is not None:
                delay = min(wait, policy.retry_after_cap_s)
        if delay is None:
            delay = policy.backoff(retry)
        if retry >= max_retries or loop.time() + delay >= deadline:
            raise failed
        await asyncio.sleep(delay)
        retry += 1


async def failure_of(response: httpx.Response) -> TurnFailed:
    """The failure that an error response stands for; reads a bounded part and closes it.

    The code is the problem+json `code` (or an OpenAI-style `error.code`), else
    `http_<status>`; the detail starts with the status and quotes the body's own detail.
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
    return TurnFailed(code or f"http_{status}", text)


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
