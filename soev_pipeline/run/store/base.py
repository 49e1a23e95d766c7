"""The port of the run archive: where a run's bytes live (docs/runs.md#the-object-store-archive).

A store keeps the runs of a runs folder. Two implement it, chosen by the runs folder's
form (`open_store`): `LocalStore` for a folder on disk and `ObjectStore` for an object-store
URL (`s3://bucket/prefix`). Both hold the same guarantees, which one contract suite tests
over both (tests/run/test_archive.py):

- a run's manifest is created only if the run is absent;
- an attempt is reported (its `archived` callback) only once it is archived; once
  `EvidenceSink.flush` or `close` returns, every appended attempt is; and never twice: an
  attempt run once more gets a new entry, and the last of a (case, attempt) counts;
- one command at a time holds a run (`locked`): another gets `RunLockedError` naming the
  holder, and a holder that died frees the run (at once on disk, when its lease expires on
  object storage);
- scorings are numbered without collisions (`new_scoring`), and a scoring's `report.json`
  is committed last of its files: the mark that the scoring is complete.

While a command works on a run, its files are read and written in a local folder
(`run_dir`): the archive itself for the local store, a cache of this process for the object
store, which `refresh_evidence`/`refresh_scorings` bring up to date and `commit` publishes
from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence


class RunLockedError(ProjectError):
    """Another command works on the run: a run, a resume or a rescore of it."""


class EvidenceSink(Protocol):
    """Where the attempt loop archives each attempt as it finishes."""

    written: int

    def append(self, evidence: Evidence, archived: Callable[[str], None] | None = None) -> None:
        """Archive `evidence`, maybe in the background. Once it is archived, `archived` gets
        its line as archived (secrets redacted, without the newline): what a reader of the
        archive will decode. Only then is the attempt reported (counted, graded, shown).

        `archived` runs on the thread of the event loop that called `append` (in `check`,
        `flush` or `close` when none runs), in the order of the archive.
        """

    def check(self) -> None:
        """Raise when no more attempt may start: the run's lease is lost, or an attempt
        could not be archived.

        Raises:
            RunLockedError: another command took the run over.
        """

    def flush(self) -> None:
        """Archive every appended attempt now and wait for it (the last attempt, Ctrl-C);
        their `archived` callbacks have run when this returns.

        Raises:
            OSError, ProjectError: an attempt could not be archived.
        """

    def close(self) -> None:
        """Flush, and end the sink.

        Raises:
            OSError, ProjectError: an attempt could not be archived.
        """

    def __enter__(self) -> EvidenceSink: ...

    def __exit__(self, *exc: object) -> None: ...


class ArchiveStore(Protocol):
    """The runs of one runs folder, wherever their bytes live."""

    def where(self, run_id: str, name: str = "") -> str:
        """The run (or its file `name`) as messages name it: a path or a URL."""

    def run_dir(self, run_id: str) -> Path:
        """The local folder in which the run's files are read and written."""

    def locked(self, run_id: str, purpose: str) -> AbstractContextManager[None]:
        """Hold the run for `purpose` (run, resume, rescore) while the block runs.

        Raises:
            RunLockedError: another command holds the run; the message names it.
        """

    def has_manifest(self, run_id: str) -> bool:
        """Whether the run exists (its manifest is archived)."""

    def read_ahead(self, run_id: str) -> None:
        """A viewer is about to read the run's manifest and its latest report: start
        bringing what it can at once (nothing to do on disk)."""

    def create_run(self, run_id: str, manifest: str) -> bool:
        """Archive the run's manifest (JSON text) if the run is absent; False if it exists."""

    def evidence_writer(self, run_id: str) -> EvidenceSink:
        """A sink for the run's attempts."""

    def refresh_evidence(self, run_id: str) -> None:
        """Bring `run_dir(run_id)/evidence.jsonl` up to date with the archive."""

    def refresh_scorings(self, run_id: str, *, verdicts: bool = True) -> None:
        """Bring the scoring folders of `run_dir(run_id)` up to date with the archive;
        without `verdicts`, leave the verdicts to `fetch` (a viewer's run page needs only
        the report and the saved index)."""

    def fetch(self, run_id: str, name: str) -> None:
        """Bring the run's file `name` (`scorings/0001/verdicts.jsonl`) into
        `run_dir(run_id)`, if the archive has it and this process has not yet."""

    def new_scoring(self, run_id: str) -> Path:
        """Claim the next scoring number and return its (local) folder."""

    def discard_scoring(self, run_id: str, scoring: Path) -> None:
        """Remove what a scoring that did not finish left behind, where it can be removed."""

    def commit(self, run_id: str, scoring: Path, names: Sequence[str]) -> None:
        """Publish the files `names` of a scoring folder, in order, each created only once."""

    def run_ids(self) -> list[str]:
        """The ids of the runs that have a manifest, in no particular order."""
