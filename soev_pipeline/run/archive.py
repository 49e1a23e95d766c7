"""The run archive (docs/runs.md#the-archive), wherever its bytes live (`store`).

    <runs>/<run_id>/manifest.json
    <runs>/<run_id>/evidence.jsonl               one attempt a line, appended as each finishes
    <runs>/<run_id>/scorings/<NNNN>/verdicts.jsonl
    <runs>/<run_id>/scorings/<NNNN>/report.json  the report without its case list
    <runs>/<run_id>/scorings/<NNNN>/scoring.json

`<runs>` is a folder (`store.local`) or an object-store URL (`store.objects`, which keeps
the same files in a cache folder of the command while it works on them). Evidence is
streamed: written a line at a time, read a line at a time. It is only ever appended to: an
attempt that did not run and is run once more gets a second line, and the last line of a
(case, attempt) is the one that counts (`iter_attempts`). A rescore adds a scoring and keeps
the earlier ones; the report of a run is that of its latest scoring.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.project.paths import RunsDir

from .manifest import Manifest
from .store import EvidenceSink, RunLockedError, object_store_of, open_store
from .store.files import (
    MAX_JSON_BYTES,
    check_regular,
    drop_broken_last_line,
    evidence_key,
    json_text,
    naming,
    open_regular,
    parses,
    read_json_file,
    write_json_atomically,
)
from .store.local import EVIDENCE, LOCK, MANIFEST, SCORINGS, EvidenceWriter, run_lock

__all__ = [
    "EVIDENCE",
    "LOCK",
    "MANIFEST",
    "MAX_JSON_BYTES",
    "REPORT",
    "RUN_ID",
    "SCORING",
    "SCORINGS",
    "VERDICTS",
    "EvidenceWriter",
    "RunArchive",
    "RunLockedError",
    "archive_at",
    "check_regular",
    "check_run_id",
    "drop_broken_last_line",
    "list_runs",
    "naming",
    "new_run_id",
    "open_regular",
    "read_json_file",
    "run_lock",
    "write_json_atomically",
]

logger = logging.getLogger(__name__)

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
VERDICTS = "verdicts.jsonl"
REPORT = "report.json"
SCORING = "scoring.json"


def check_run_id(run_id: str) -> str:
    """Return `run_id` when it is a valid run id (a Dagster partition key), else raise."""
    if not RUN_ID.fullmatch(run_id) or len(run_id) > 128:
        raise ProjectError(
            f"run id {run_id!r} is not valid: use lower-case letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return run_id


def new_run_id(now: datetime | None = None) -> str:
    """A sortable UTC timestamp, e.g. `20261129t183056.123z`."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.strftime("%Y%m%dt%H%M%S.") + f"{now.microsecond // 1000:03d}z"


class RunArchive:
    """One run: its manifest, its evidence and its scorings, in the store of `runs_dir`.

    `path` is the local folder that holds the run's files while this process reads and
    writes them (the archive itself on disk; a cache for object storage); `location` is
    the run as messages name it.
    """

    def __init__(self, runs_dir: RunsDir, run_id: str) -> None:
        self.run_id = check_run_id(run_id)
        self.runs_dir = runs_dir
        self.store = open_store(runs_dir)
        self.path = self.store.run_dir(self.run_id)

    @property
    def location(self) -> str:
        """The run's folder or URL."""
        return self.store.where(self.run_id)

    def where(self, name: str) -> str:
        """The run's file `name` (`scorings/0001/report.json`) as messages name it."""
        return self.store.where(self.run_id, name)

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def evidence_path(self) -> Path:
        return self.path / EVIDENCE

    def exists(self) -> bool:
        return self.store.has_manifest(self.run_id)

    def read_ahead(self) -> None:
        """Start bringing the manifest's and the latest report's objects from an object
        store at once (`ArchiveStore.read_ahead`): a viewer opens the run next."""
        self.store.read_ahead(self.run_id)

    def locked(self, purpose: str) -> AbstractContextManager[None]:
        """Hold the run for `purpose` (run, resume or rescore): `flock` on disk, a lease in
        object storage (`ArchiveStore.locked`); re-entrant within a process.

        Raises:
            RunLockedError: another command holds the run.
        """
        return self.store.locked(self.run_id, purpose)

    def create(self, manifest: Manifest) -> None:
        """Archive the run's manifest, only if the run is absent. Raises when it exists."""
        if not self.store.create_run(self.run_id, json_text(manifest.model_dump(mode="json"))):
            raise ProjectError(f"{self.location}: run {self.run_id!r} already exists")

    def manifest(self) -> Manifest:
        """Read the manifest.

        Raises:
            ProjectError: the run does not exist; its manifest is not a regular file, is
                too large or is invalid; or it names another run than its folder does.
        """
        if not self.exists():
            raise ProjectError(f"{self.runs_dir}: no run {self.run_id!r}")
        path = self.manifest_path
        with open_regular(path, max_bytes=MAX_JSON_BYTES) as file, naming(path):
            data = file.read()
        try:
            manifest = Manifest.model_validate_json(data)
        except ValidationError as exc:
            raise ProjectError(
                f"{self.manifest_path}: not a valid manifest ({exc.errors()[0]['msg']})"
            ) from None
        if manifest.run_id != self.run_id:
            raise ProjectError(
                f"{self.manifest_path}: the manifest is of run {manifest.run_id!r}, not of "
                f"{self.run_id!r} whose folder holds it; a run folder cannot be renamed"
            )
        return manifest

    def evidence_writer(self) -> EvidenceSink:
        return self.store.evidence_writer(self.run_id)

    def evidence_file(self) -> Path:
        """The run's evidence as one local file, up to date with the archive."""
        self.store.refresh_evidence(self.run_id)
        return self.evidence_path

    def iter_evidence(self, *, warn: bool = True) -> Iterator[Evidence]:
        """Yield the archived evidence a line at a time.

        The last line is skipped when it does not decode or parse (a crash cut it short),
        never fatal (docs/runs.md#the-archive). A broken line with lines after it is damage, not a
        crash: it stops the reading with an error that names its line number. A line whose
        attempt number lies outside 0..k-1 of the run's manifest was not written by the
        run: it is skipped, with a warning that names it (unless `warn` is false: a second
        reading in one command says nothing new), and never counted. When an attempt
        appears twice, both are yielded (`iter_attempts` yields the one that counts).

        Raises:
            ProjectError: a line other than the last is not valid evidence, or the evidence
                is not a regular file.
        """
        self.store.refresh_evidence(self.run_id)
        for _, evidence in self._numbered(warn=warn):
            yield evidence

    def _numbered(self, *, warn: bool) -> Iterator[tuple[int, Evidence]]:
        """`iter_evidence`, each with its line number."""
        if not self.evidence_path.exists():
            return
        k = self.manifest().k if self.exists() else None
        broken: int | None = None
        with open_regular(self.evidence_path) as lines, naming(self.evidence_path):
            for number, line in enumerate(lines, start=1):
                if broken is not None:
                    raise ProjectError(
                        f"{self.evidence_path}: line {broken}: not a valid evidence line "
                        "(only a last line cut short by a crash is skipped)"
                    )
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    broken = number
                    continue
                try:
                    evidence = Evidence.model_validate_json(line)
                except ValidationError:
                    broken = number
                    continue
                if k is not None and evidence.attempt >= k:
                    if not warn:
                        continue
                    logger.warning(
                        "%s: line %d: attempt %d is outside 0..%d of run %r; line skipped",
                        self.evidence_path,
                        number,
                        evidence.attempt,
                        k - 1,
                        self.run_id,
                    )
                    continue
                yield number, evidence

    def superseded(self) -> frozenset[int]:
        """The numbers of the evidence lines that a later line of the same (case, attempt)
        replaces: an attempt that did not run, run once more (docs/runs.md#the-archive).

        Read without decoding the lines' bodies. A last line that a crash cut short or left
        broken replaces nothing, as it is not read either.
        """
        self.store.refresh_evidence(self.run_id)
        return self._scan()[0]

    def iter_attempts(self, *, warn: bool = True) -> Iterator[Evidence]:
        """Yield each archived (case, attempt) once: its last line, in the order of the file.

        This is how every reader counts the run's attempts (grading, the report's ledger):
        a line that a later one of the same attempt replaces is passed over. Otherwise as
        `iter_evidence`.
        """
        replaced = self.superseded()  # brings the evidence up to date
        for number, evidence in self._numbered(warn=warn):
            if number not in replaced:
                yield evidence

    def attempt_keys(self) -> list[tuple[str, int] | None]:
        """The (case, attempt) of each line that counts, in the order of the file, read
        without decoding the lines' bodies; None for a line whose start does not read.

        `iter_attempts` yields these attempts in this order, when every line is one the
        run wrote (a full line, an attempt within the manifest's k).
        """
        replaced = self.superseded()  # brings the evidence up to date
        if not self.evidence_path.exists():
            return []
        with open_regular(self.evidence_path) as lines, naming(self.evidence_path):
            return [
                evidence_key(line)
                for number, line in enumerate(lines, start=1)
                if line.strip() and number not in replaced
            ]

    def count_attempts(self) -> int:
        """About how many lines `iter_attempts` yields, one per archived (case, attempt),
        counted without decoding the lines' bodies (for progress)."""
        self.store.refresh_evidence(self.run_id)
        return self._scan()[1]

    def _scan(self) -> tuple[frozenset[int], int]:
        """The lines that later ones replace, and how many (case, attempt) lines count."""
        if not self.evidence_path.exists():
            return frozenset(), 0
        last: dict[tuple[str, int], int] = {}
        replaced: set[int] = set()
        pending: tuple[int, tuple[str, int]] | None = None
        final = b""

        def count(number: int, key: tuple[str, int]) -> None:
            if key in last:
                replaced.add(last[key])
            last[key] = number

        with open_regular(self.evidence_path) as lines, naming(self.evidence_path):
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                if pending is not None:
                    count(*pending)
                key = evidence_key(line)
                pending = None if key is None else (number, key)
                final = line
        if pending is not None and final.endswith(b"\n") and parses(final):
            count(*pending)
        return frozenset(replaced), len(last)

    def completed(self) -> set[tuple[str, int]]:
        """The (case id, attempt) pairs that have evidence."""
        return {(evidence.case_id, evidence.attempt) for evidence in self.iter_evidence()}

    # Scorings

    @property
    def scorings_path(self) -> Path:
        return self.path / SCORINGS

    def scorings(self, *, verdicts: bool = True) -> list[Path]:
        """The scoring folders, oldest first; without `verdicts`, an object store's latest
        verdicts are left in the archive until `fetch` brings them."""
        self.store.refresh_scorings(self.run_id, verdicts=verdicts)
        if not self.scorings_path.exists():
            return []
        return sorted(
            path for path in self.scorings_path.iterdir() if path.is_dir() and path.name.isdigit()
        )

    def new_scoring(self) -> Path:
        """Claim the next scoring number (0001, 0002, ...) and return its folder."""
        return self.store.new_scoring(self.run_id)

    def commit(self, scoring: Path, names: Sequence[str]) -> None:
        """Publish the files `names` of a scoring, in order (`ArchiveStore.commit`)."""
        self.store.commit(self.run_id, scoring, names)

    def discard(self, scoring: Path) -> None:
        """Remove what a scoring that did not finish left behind."""
        self.store.discard_scoring(self.run_id, scoring)

    def fetch(self, name: str) -> Path:
        """The run's file `name` (`scorings/0001/verdicts.jsonl`) in `path`, brought there
        from an object store when this process has not yet (it may not exist)."""
        self.store.fetch(self.run_id, name)
        return self.path / name

    def latest_report_path(self, *, verdicts: bool = True) -> Path | None:
        """The report of the latest complete scoring, or None when the run was never scored.
        Without `verdicts`, its verdicts may still be in an object store (`fetch`).

        Raises:
            ProjectError: its `report.json` or `verdicts.jsonl` is not a regular file, or
                the report is larger than `MAX_JSON_BYTES`: so that every reader of a
                report refuses them at once, with one line.
        """
        for scoring in reversed(self.scorings(verdicts=verdicts)):
            report = scoring / REPORT
            if report.exists():
                check_regular(report, max_bytes=MAX_JSON_BYTES)
                if (scoring / VERDICTS).exists():
                    check_regular(scoring / VERDICTS)
                return report
        return None

    def latest_report(self) -> dict[str, Any] | None:
        """The latest report.json as it is: without the case list (see `read_report`).

        Raises:
            ProjectError: the report is refused (see `latest_report_path`), or is not a
                JSON object.
        """
        path = self.latest_report_path()
        if path is None:
            return None
        result = read_json_file(path)
        if not isinstance(result, dict):
            raise ProjectError(f"{path}: not a report (not a JSON object)")
        return result


def archive_at(run_dir: Path) -> RunArchive:
    """The run whose files `run_dir` holds: an object store's run for its cache folder."""
    remote = object_store_of(run_dir)
    if remote is not None:
        return RunArchive(remote[0], remote[1])
    return RunArchive(run_dir.parent, run_dir.name)


def list_runs(runs_dir: RunsDir) -> list[tuple[RunArchive, Manifest]]:
    """The runs in `runs_dir` with their manifests, each read once, oldest first."""
    runs = []
    for run_id in open_store(runs_dir).run_ids():
        if RUN_ID.fullmatch(run_id):
            run = RunArchive(runs_dir, run_id)
            runs.append((run, run.manifest()))
    return sorted(runs, key=lambda pair: (pair[1].created_at, pair[0].run_id))
