"""A run's attempts as they are archived, for grading them while the run goes on.

The attempt step feeds the stream the line of each attempt as the archive holds it; the
grade step reads it as an async iterable of `Evidence`, decoded from those lines as a
reading of the archive would decode them. So the verdicts of a streamed grading are those
of a grading of the archive after the run, line for line, as long as the archive's order
is the order of the stream: `keys` keeps the stream's order, for `service` to compare with
the archive's when the attempts are done. The stream folds the run's ledger as it goes
(`ledger`), which is then the archive's too, for the report.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from soev_pipeline.core.models import Evidence

from .manifest import Manifest
from .unrun import AttemptLedger, LedgerFold


class ArchivedStream:
    """The attempts of a new run, in the order they are archived.

    `open` (the run is created, its attempts are planned) lets grading start; `archived`
    adds an attempt's line; `close` ends the stream. `first` is set once the first line is
    in, or the stream is closed: what starts with the attempts but is not needed for the
    first requests waits for it (see `overlap`). `abandon` ends it too and marks it
    unfit for the scoring: the run went on in a way the stream does not follow (its
    unrun attempts are run once more, and their new lines replace old ones).
    """

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.opened = asyncio.Event()
        self.first = asyncio.Event()
        self.total = 0
        self.chunk = 1
        self.keys: list[tuple[str, int]] = []
        self.closed = False
        self.abandoned = False
        self._ledger: LedgerFold | None = None

    def open(self, total: int, chunk: int, manifest: Manifest) -> None:
        """The run of `manifest` is archived and plans `total` attempts: grading may start,
        in chunks of at most `chunk` attempts."""
        self.total, self.chunk = total, max(1, chunk)
        self._ledger = LedgerFold(manifest)
        self.opened.set()

    def ledger(self) -> AttemptLedger | None:
        """The ledger of the attempts read so far (`unrun.read_ledger` of the archive, when
        the archive's attempts are the stream's); None before the stream opened."""
        return None if self._ledger is None else self._ledger.ledger()

    def archived(self, line: str) -> None:
        """The line of an attempt, just archived; dropped once the stream is closed."""
        if not self.closed:
            self._lines.put_nowait(line)
            self.first.set()

    def close(self) -> None:
        """No more attempts: the reader ends after the ones it has."""
        if not self.closed:
            self.closed = True
            self._lines.put_nowait(None)
            self.first.set()

    def abandon(self) -> None:
        """End the stream, unfit for the scoring (see the class)."""
        self.abandoned = True
        self.close()

    def __aiter__(self) -> AsyncIterator[Evidence]:
        return self._read()

    async def _read(self) -> AsyncIterator[Evidence]:
        while (line := await self._lines.get()) is not None:
            evidence = Evidence.model_validate_json(line)
            self.keys.append((evidence.case_id, evidence.attempt))
            if self._ledger is not None:
                self._ledger.add(evidence)
            yield evidence
