"""What the two HTTP clients share: the system under test's and the judge's.

Both are built by `create_client`: the same identity, the project's headers with `${VAR}`
filled in, the bearer token, timeouts that fail fast on a connection that does not open,
and no redirects. Both send through `send_with_retries`, which waits out a retry with the
same jittered exponential backoff and reads `Retry-After` the same way. What each client
may retry (`RetryRules`), and how its failures read, stay its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from soev_pipeline import __version__

from .env import UnsetVariableError, expand_env
from .errors import SoevError
from .project import JudgeConfig, SystemConfig
from .secrets import register_secret, register_url_secrets

USER_AGENT = f"soev-pipeline/{__version__}"
CONNECT_TIMEOUT_S = 10.0
"""The longest wait for a connection: a server that is down fails fast and is retried."""
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)
"""httpx's own default pool, for a client whose callers bound their requests themselves."""


def client_timeout(timeout_s: float) -> httpx.Timeout:
    """Wait at most `timeout_s` for anything, and at most `CONNECT_TIMEOUT_S` to connect."""
    return httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))


def request_headers(
    config: SystemConfig | JudgeConfig, *, section: str, error: type[SoevError]
) -> dict[str, str]:
    """The headers of every request: user agent, `config.headers`, the bearer token.

    A header value may hold `${VAR}` or `${VAR:-default}`, filled in as `expand_env` does;
    the token comes from the variable that `api_key_env` names and wins over an
    `Authorization` in `headers`. Secrets are read only here, so they never sit in a file,
    and each is registered (`core.secrets`) to be redacted from all that is recorded: the
    token, every value a variable filled in and the whole header it made, and the
    credentials of the base URL.

    Args:
        config: the project's `system:` or `judge:` section.
        section: the section's name in project.yaml, for the error message.
        error: the error to raise, so each client's failure reaches whoever must act on it.

    Raises:
        SoevError: an `error` when a variable without a default is not set (or, for the
            token, is empty); the message names the key and the variable, never a value.
    """
    register_config_secrets(config)
    headers = {"User-Agent": USER_AGENT}
    for name, value in config.headers.items():
        try:
            headers[name] = expand_env(value)
        except UnsetVariableError as exc:
            raise error(
                f"{section}.headers[{name!r}] uses ${{{exc.name}}}, but the environment "
                f"variable {exc.name!r} is not set"
            ) from None
    if config.api_key_env is not None:
        token = os.environ.get(config.api_key_env)
        if not token:
            raise error(
                f"{section}.api_key_env names {config.api_key_env!r}, but that environment "
                "variable is not set"
            )
        headers["Authorization"] = f"Bearer {token}"
    return headers


def register_config_secrets(config: SystemConfig | JudgeConfig) -> None:
    """Register the secrets of a section that are set, without needing any of them.

    For a command that sends nothing with them but may meet them in what it reads (an
    offline rescore reads judge answers cached by an older version), so that they are
    redacted all the same. `request_headers` registers them when they are sent.
    """
    register_url_secrets(config.url)
    if config.api_key_env is not None and os.environ.get(config.api_key_env):
        register_secret(os.environ[config.api_key_env])
    for value in config.headers.values():
        with contextlib.suppress(UnsetVariableError):
            expanded = expand_env(value, on_value=register_secret)
            if expanded != value:
                register_secret(expanded)


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which reads a response's cookies only when it sets some.

    httpx hands every response to its client's jar, which wraps the response and its
    request in `urllib` objects before it looks for a `Set-Cookie` header (about 13 µs a
    response; two responses an attempt, most with no cookie at all). Without that header
    the jar would add nothing, so it is not asked.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class Client(httpx.AsyncClient):
    """httpx's client with the cookie jar of `_Cookies`: the same cookies, kept and sent
    as httpx keeps and sends them."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.cookies = options.get("cookies") or {}

    @property
    def cookies(self) -> httpx.Cookies:
        return self._jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._jar = _Cookies(cookies)


def create_client(
    config: SystemConfig | JudgeConfig,
    *,
    section: str,
    error: type[SoevError],
    limits: httpx.Limits = DEFAULT_LIMITS,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """Open the client of a project section; use it with `async with`.

    Relative paths join under the section's base URL; the timeouts are `client_timeout`'s
    of its `timeout_s`; a redirect is returned, never followed, so that the token is not
    sent elsewhere.

    Raises:
        SoevError: an `error` when a variable that the headers need is not set (see
            `request_headers`).
    """
    return Client(
        base_url=config.url,
        headers=request_headers(config, section=section, error=error),
        timeout=client_timeout(config.timeout_s),
        limits=limits,
        transport=transport,
        follow_redirects=False,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before a retry.

    Attributes:
        backoff_s: the first backoff; each retry doubles it.
        backoff_cap_s: the longest backoff.
        retry_after_cap_s: the longest wait a `Retry-After` header can ask for; the arms
            wait at most this long, the judge gives up on a longer wait.
    """

    backoff_s: float = 0.5
    backoff_cap_s: float = 20.0
    retry_after_cap_s: float = 60.0

    def backoff(self, retry: int) -> float:
        """The jittered wait before retry number `retry` (0 for the first).

        The wait lies between half and all of the doubled backoff, so clients that failed
        together do not all come back at the same moment.
        """
        ceiling = min(self.backoff_cap_s, self.backoff_s * 2**retry)
        return random.uniform(ceiling / 2, ceiling)


@dataclass(frozen=True)
class RetryRules:
    """What a client may send again: only what is safe to repeat for its protocol.

    Attributes:
        status: whether a response with this (non-2xx) status may be retried.
        errors: the errors of sending that may be retried; any other error is raised at once.
        give_up_on_long_wait: when `Retry-After` asks for more than `retry_after_cap_s`,
            stop at once (True) rather than wait the cap (False).
    """

    status: Callable[[int], bool]
    errors: tuple[type[httpx.HTTPError], ...]
    give_up_on_long_wait: bool = False


@dataclass(frozen=True)
class Sent:
    """How `send_with_retries` ended.

    Attributes:
        last: the response that ended it (a 2xx, a status the rules do not retry, or the
            last retryable one), which the caller reads and closes; or the retryable error
            that ended it.
        retries: how many retries were sent.
        retryable: `last` is a failure the rules retry, ended by the number of retries, the
            deadline or a long `Retry-After`.
        refused_wait_s: the `Retry-After` wait that ended the retries for being too long.
    """

    last: httpx.Response | httpx.HTTPError
    retries: int
    retryable: bool = False
    refused_wait_s: float | None = None


async def send_with_retries(
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    rules: RetryRules,
    policy: RetryPolicy,
    max_retries: int,
    deadline: float | None = None,
    slots: asyncio.Semaphore | None = None,
    on_retry: Callable[[str, int, float], None] | None = None,
) -> Sent:
    """Call `send` until it succeeds or a failure must not be retried, and say how it ended.

    A retry waits the jittered backoff, or what `Retry-After` asks for (see `RetryRules`
    for a wait past the cap). Every response that is not returned is closed first.

    Args:
        send: sends the request once and returns its response.
        rules: what may be retried.
        policy: how long to wait.
        max_retries: how many retries at most.
        deadline: a `loop.time()`; a retry whose wait would reach it is not tried.
        slots: held while `send` runs, not while a retry waits.
        on_retry: called before each wait with the reason ("HTTP 503", "ConnectError"),
            the number of the retry (1 for the first) and the wait in seconds.

    Raises:
        httpx.HTTPError: `send` raised an error that the rules do not retry.
    """
    loop = asyncio.get_running_loop()
    retries = 0
    while True:
        wait: float | None = None
        last: httpx.Response | httpx.HTTPError
        try:
            async with slots if slots is not None else nullcontext():
                last = await send()
        except rules.errors as exc:
            last, reason = exc, type(exc).__name__
        else:
            if last.is_success or not rules.status(last.status_code):
                return Sent(last, retries)
            reason = f"HTTP {last.status_code}"
            wait = retry_after_seconds(last.headers.get("retry-after"))
        if retries >= max_retries:
            return Sent(last, retries, retryable=True)
        if wait is not None and wait > policy.retry_after_cap_s:
            if rules.give_up_on_long_wait:
                return Sent(last, retries, retryable=True, refused_wait_s=wait)
            wait = policy.retry_after_cap_s
        delay = policy.backoff(retries) if wait is None else wait
        if deadline is not None and loop.time() + delay >= deadline:
            return Sent(last, retries, retryable=True)
        if isinstance(last, httpx.Response):
            await last.aclose()
        retries += 1
        if on_retry is not None:
            on_retry(reason, retries, delay)
        await asyncio.sleep(delay)


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """The wait a `Retry-After` header asks for: delta seconds or an HTTP date; None if invalid.

    A date in the past asks for no wait; a negative number of seconds is invalid.
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


REASONING_PARTS = frozenset({"thinking", "reasoning"})
"""Content parts in which a reasoning model thinks aloud: not part of its answer."""


def message_text(content: Any, *, other_parts: bool = False) -> str | None:
    """The text of a chat-completions message's `content`: a string, or an array of parts.

    An array (`[{"type": "text", "text": "..."}, ...]`, as several servers send it) reads
    as its text parts joined in order, passing over the parts in which a reasoning model
    thinks aloud (`REASONING_PARTS`). It must hold a text part, and, unless `other_parts`,
    no part of another type: an image is not a text reply of the system under test, while
    the judge's answer is read from its text parts whatever else it holds. None for
    anything else.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in REASONING_PARTS:
            continue
        text = part.get("text") if kind == "text" else None
        if not isinstance(text, str):
            if other_parts and kind != "text" and isinstance(kind, str):
                continue
            return None
        texts.append(text)
    return "".join(texts) if texts else None
