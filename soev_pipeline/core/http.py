"""What the two HTTP clients share: the system under test's and the judge's.

Both identify themselves the same way, fail fast on a connection that does not open, wait
out a retry with the same jittered exponential backoff, and read `Retry-After` the same
way. Each client keeps its own rules on what it retries and how its failures read.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from soev_pipeline import __version__

USER_AGENT = f"soev-pipeline/{__version__}"
CONNECT_TIMEOUT_S = 10.0
"""The longest wait for a connection: a server that is down fails fast and is retried."""


def client_timeout(timeout_s: float) -> httpx.Timeout:
    """Wait at most `timeout_s` for anything, and at most `CONNECT_TIMEOUT_S` to connect."""
    return httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))


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
