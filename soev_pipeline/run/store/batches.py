"""The attempts of a command, archived in object storage in batches, off the attempt loop.

Each attempt's line goes into a buffer; one upload thread sends the buffer as one batch
object, created only if absent (`layout.batch_key`), once `BATCH_ATTEMPTS` attempts wait or
`BATCH_WAIT_S` has passed since the first of them, and at once on `flush` (the last
attempt, Ctrl-C) and `close` (before the compaction). While one batch uploads, the next
fills: a slow store gets larger batches, not a longer queue of requests.

An attempt is reported archived (its `archived` callback: counted, graded, shown) only
once its batch exists and the lease was still this command's after it landed: before
that, a process that dies or loses the run has reported nothing it did not archive.
Callbacks run on the event loop of the `append` call, in the order of the batches, which
is the order of the archive (one upload at a time, numbered upwards).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol

from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

from .base import RunLockedError
from .bucket import Bucket
from .layout import Name, batch_bytes, batch_key
from .lease import Lease

logger = logging.getLogger(__name__)

BATCH_ATTEMPTS = 64
"""A batch is sent once this many attempts wait for it."""
BATCH_WAIT_S = 0.1
"""...or once the first of them has waited this long."""
QUEUED = 256
"""Attempts appended but not yet archived at most; `append` waits beyond this. With the
attempts in flight, this bounds what a paused holder may have sent to the system that its
successor sends again (docs/runs.md#the-object-store-archive)."""
RENUMBER_TRIES = 8
"""How often a batch takes the next number when its number was taken by a command that
lost the run while this one holds it (each such command holds at most one batch)."""

Archived = Callable[[str], None]


class BatchHome(Protocol):
    """What a writer needs of its store."""

    bucket: Bucket

    def where(self, run_id: str, name: str = "") -> str: ...

    def landed(self, run_id: str, key: str, names: list[Name], data: bytes) -> None:
        """A batch of this process exists now: the run's listing changed, and its bytes
        need not be downloaded again."""

    def compact(self, run_id: str) -> None:
        """Compact the run's batches into one object."""

    def closed(self, run_id: str, writer: BatchWriter) -> None:
        """The writer is closed: readers need not wait for it any more."""


class BatchWriter:
    """Archives a command's attempts in batches (see the module); an `EvidenceSink`."""

    def __init__(
        self,
        home: BatchHome,
        run_id: str,
        lease: Lease | None,
        generations: dict[tuple[str, int], int],
        number: int,
    ) -> None:
        """`generations`: the last n of each (case, attempt) this command's plan was made
        from; `number`: the first free batch number it saw."""
        self.home, self.run_id, self.lease = home, run_id, lease
        self._generations = dict(generations)
        self._number = number
        self._buffer: list[tuple[Name, bytes, Archived | None]] = []
        self._first = 0.0
        self._waiting = 0  # appended, not yet landed or dropped
        self._flushing = 0
        self._stopping = False
        self._errors: list[BaseException] = []
        self._landed: deque[tuple[str, Archived]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state = threading.Condition()
        self._closed = False
        self.written = 0
        self._thread = threading.Thread(target=self._upload_all, name="soev-batches", daemon=True)
        self._thread.start()

    def _lost(self) -> RunLockedError:
        seconds = self.lease.seconds if self.lease is not None else 0
        return RunLockedError(
            f"{self.home.where(self.run_id)}: this command lost run {self.run_id!r} (it "
            f"paused longer than its {seconds:g} s lease and another command took the run); "
            "its attempts reported archived are archived"
        )

    def _holds(self) -> bool:
        return self.lease is None or self.lease.valid()

    def check(self) -> None:
        self._deliver()
        if self._errors:
            raise self._errors[0]
        if not self._holds():
            raise self._lost()

    def append(self, evidence: Evidence, archived: Archived | None = None) -> None:
        self.check()
        if self._loop is None:
            with suppress(RuntimeError):  # no loop: callbacks run in check, flush, close
                self._loop = asyncio.get_running_loop()
        key = (evidence.case_id, evidence.attempt)
        generation = self._generations.get(key, -1) + 1
        self._generations[key] = generation
        line = (redact(evidence.model_dump_json()) + "\n").encode("utf-8")
        with self._state:
            self._state.wait_for(lambda: self._waiting < QUEUED or bool(self._errors))
            if not self._buffer:
                self._first = time.monotonic()
            self._buffer.append(((*key, generation), line, archived))
            self._waiting += 1
            self._state.notify_all()
        self.written += 1

    def _due(self) -> bool:
        return bool(self._buffer) and (
            len(self._buffer) >= BATCH_ATTEMPTS
            or self._flushing > 0
            or self._stopping
            or time.monotonic() - self._first >= BATCH_WAIT_S
        )

    def _upload_all(self) -> None:
        while True:
            with self._state:
                while not self._due():
                    if self._stopping and not self._buffer:
                        return
                    timeout = None
                    if self._buffer:
                        timeout = max(0.0, self._first + BATCH_WAIT_S - time.monotonic())
                    self._state.wait(timeout)
                batch, self._buffer = self._buffer, []
            try:
                if not self._errors:
                    self._upload(batch)
            except BaseException as exc:
                self._errors.append(exc)
            finally:
                with self._state:
                    self._waiting -= len(batch)
                    self._state.notify_all()

    def _upload(self, batch: list[tuple[Name, bytes, Archived | None]]) -> None:
        names = [name for name, _, _ in batch]
        data = batch_bytes(names, [line for _, line, _ in batch])
        for _ in range(RENUMBER_TRIES):
            if not self._holds():  # the lease, checked before each batch
                raise self._lost()
            key = batch_key(self._number)
            created = self.home.bucket.create(f"{self.run_id}/{key}", data)
            self._number += 1
            if created is not None:
                break
        else:
            raise self._lost()
        self.home.landed(self.run_id, key, names, data)
        if not self._holds():  # a successor may have read the run before this landed
            raise self._lost()
        with self._state:
            for _, line, archived in batch:
                if archived is not None:
                    self._landed.append((line[:-1].decode("utf-8"), archived))
        if self._loop is not None:
            with suppress(RuntimeError):  # the loop is closed: `flush` and `close` deliver
                self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """Call the callbacks of the attempts that landed, in their order (on the thread
        of the attempt loop)."""
        while True:
            with self._state:
                if not self._landed:
                    return
                line, archived = self._landed.popleft()
            archived(line)

    def _settle(self) -> None:
        """Send what waits at once and wait until every appended attempt landed (or was
        dropped after an error)."""
        with self._state:
            self._flushing += 1
            self._state.notify_all()
            try:
                self._state.wait_for(lambda: self._waiting == 0)
            finally:
                self._flushing -= 1

    def drain(self) -> None:
        """Wait until every attempt appended so far is archived (for a reader of this
        process, on any thread)."""
        self._settle()

    def flush(self) -> None:
        self._settle()
        self.check()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._state:
            self._stopping = True
            self._state.notify_all()
        self._thread.join()
        self._deliver()
        self.home.closed(self.run_id, self)
        if self._errors:
            raise self._errors[0]
        if self._holds():  # one that lost the run leaves the compaction to its holder
            self.home.compact(self.run_id)

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
