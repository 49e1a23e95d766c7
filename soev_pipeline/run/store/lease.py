"""The lease of a run in object storage: who holds it, renewed by compare-and-swap.

Object storage has no `flock`. A run's `lease.json` names its holder (host, pid, what for)
and when the lease expires; the holder renews it every third of its length by replacing the
object only if its ETag is still the one it wrote (`If-Match`). Another command may take the
run when the lease has expired (its holder died, or paused longer than the lease), again by
compare-and-swap, so two commands that try at once cannot both win.

A holder that loses its lease (it paused, and another took the run) learns it at its next
renewal or when its own clock says the lease ran out, whichever comes first; from then on
it starts no attempt (`valid`), so at most the attempts it had in flight are sent twice
(docs/runs.md#the-object-store-archive).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from soev_pipeline.core.errors import ProjectError

from .base import RunLockedError
from .bucket import Bucket

LEASE_ENV = "SOEV_LEASE_SECONDS"
DEFAULT_SECONDS = 60.0
"""How long a lease lasts without renewal: a crashed holder's run can be taken after this."""
MIN_SECONDS, MAX_SECONDS = 1.0, 3600.0


def lease_seconds() -> float:
    """The lease length of `$SOEV_LEASE_SECONDS`, else 60 s.

    Raises:
        ProjectError: the value is not a number of seconds from 1 to 3600.
    """
    text = os.environ.get(LEASE_ENV, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ProjectError(
            f"{LEASE_ENV}={text!r}: give the lease's length in seconds, from 1 to 3600"
        )
    return seconds


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


@dataclass
class Lease:
    """The lease of one run, held by this process while `acquire`d.

    `clock` gives the wall-clock time that the lease's expiry is written in (every machine's
    clock should agree within a few seconds, as NTP keeps them); `monotonic` measures this
    holder's own deadline, which a pause of the process does not stop.
    """

    bucket: Bucket
    name: str
    run_id: str
    purpose: str
    seconds: float = DEFAULT_SECONDS
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    monotonic: Callable[[], float] = time.monotonic
    etag: str = ""
    lost: bool = False
    _renewed: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _renewing: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _record(self, *, released: bool = False) -> bytes:
        now = self.clock()
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "purpose": self.purpose,
                "token": self.token,
                "since": _stamp(now),
                "expires": _stamp(now if released else now + timedelta(seconds=self.seconds)),
                "released": released,
            },
            sort_keys=True,
        ).encode()

    def _refusal(self, raw: bytes) -> RunLockedError:
        try:
            holder = json.loads(raw)
            who = (
                f"soev-evals {holder['purpose']} (pid {holder['pid']} on {holder['host']}); "
                f"its lease expires at {holder['expires']}"
            )
        except (ValueError, KeyError, TypeError):
            who = "another command"
        return RunLockedError(
            f"{self.bucket.where(self.name)}: run {self.run_id!r} is in use by {who}; "
            "wait for it to end, then try again"
        )

    def _expired(self, raw: bytes) -> bool:
        try:
            holder = json.loads(raw)
            return (
                bool(holder.get("released"))
                or datetime.fromisoformat(holder["expires"]) <= self.clock()
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return True  # not a lease this program wrote: nobody holds the run

    def acquire(self) -> None:
        """Take the run, or raise.

        Raises:
            RunLockedError: another command holds an unexpired lease, or took it first.
        """
        started = self.monotonic()
        found = self.bucket.get(self.name)
        if found is None:
            created = self.bucket.create(self.name, self._record())
            if created is None:
                again = self.bucket.get(self.name)
                raise self._refusal(again[0] if again else b"")
            self.etag = created
        else:
            raw, etag = found
            if not self._expired(raw):
                raise self._refusal(raw)
            swapped = self.bucket.swap(self.name, self._record(), etag)
            if swapped is None:
                again = self.bucket.get(self.name)
                raise self._refusal(again[0] if again else b"")
            self.etag = swapped
        self._renewed = started
        self._thread = threading.Thread(target=self._renew, name="soev-lease", daemon=True)
        self._thread.start()

    def valid(self) -> bool:
        """Whether this process still holds the run: never lost, and renewed within its
        length by its own clock; past that length (the process paused), renewed now."""
        if self.lost:
            return False
        with self._renewing:
            if self.monotonic() - self._renewed < self.seconds:
                return True
        return self.renew() and self.monotonic() - self._renewed < self.seconds

    def renew(self) -> bool:
        """Renew the lease once; False (and `lost`) when another took the run."""
        with self._renewing:
            if self.lost:
                return False
            started = self.monotonic()
            try:
                swapped = self.bucket.swap(self.name, self._record(), self.etag)
            except ProjectError:
                return True  # the store is unreachable: try again; `valid` runs out
            if swapped is None:
                self.lost = True
                return False
            self.etag, self._renewed = swapped, started
            return True

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            if not self.renew():
                return

    def release(self, *, remove: bool = False) -> None:
        """Stop renewing and let the run go: mark the lease released, or delete it
        (`remove`, for a run that was refused before it was archived)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lost:
            return
        try:
            if remove:
                self.bucket.delete_if(self.name, self.etag)
            else:
                self.bucket.swap(self.name, self._record(released=True), self.etag)
        except ProjectError:
            pass  # the lease expires on its own
