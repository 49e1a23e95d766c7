"""The run archive on disk (SPEC.md section 7).

    runs/<run_id>/manifest.json
    runs/<run_id>/evidence.jsonl               one attempt a line, appended as each finishes
    runs/<run_id>/scorings/<NNNN>/verdicts.jsonl
    runs/<run_id>/scorings/<NNNN>/report.json  the report without its case list
    runs/<run_id>/scorings/<NNNN>/scoring.json
    runs/<run_id>/lock                         who holds the run (see `run_lock`)

Evidence is streamed: written a line at a time and flushed, read a line at a time. A rescore
adds a scoring and keeps the earlier ones; the report of a run is that of its latest scoring.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

from .manifest import Manifest

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MANIFEST = "manifest.json"
EVIDENCE = "evidence.jsonl"
SCORINGS = "scorings"
VERDICTS = "verdicts.jsonl"
REPORT = "report.json"
SCORING = "scoring.json"
LOCK = "lock"


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


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Give an `OSError` without a file name (a full disk on write, say) the name of `path`."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def write_json_atomically(path: Path, value: Any) -> None:
    """Write `value` as indented JSON to `path` through a temporary file and a rename."""
    temporary = path.with_name(path.name + ".tmp")
    text = redact(json.dumps(value, indent=2, ensure_ascii=False)) + "\n"
    with naming(path):
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)


class EvidenceWriter:
    """Appends evidence lines, flushing each, so a crash loses at most the attempt in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with naming(path):
            drop_broken_last_line(path)
            self._file: IO[str] = path.open("a", encoding="utf-8")
        self.written = 0

    def append(self, evidence: Evidence) -> None:
        with naming(self.path):
            self._file.write(redact(evidence.model_dump_json()) + "\n")
            self._file.flush()
        self.written += 1

    def close(self) -> None:
        if not self._file.closed:
            with naming(self.path):
                try:
                    self._file.flush()
                    os.fsync(self._file.fileno())
                finally:
                    self._file.close()

    def __enter__(self) -> EvidenceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parses(line: bytes) -> bool:
    try:
        Evidence.model_validate_json(line)
    except ValidationError:
        return False
    return True


def drop_broken_last_line(path: Path) -> None:
    """Cut a last line that a crash left cut short, or that does not decode or parse.

    So appends start clean after a crash. Only the last line is looked at: a broken line
    in the middle is an error that reading reports (see `RunArchive.iter_evidence`).
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as file:
        size = file.seek(0, os.SEEK_END)
        end = size
        file.seek(size - 1)
        if file.read(1) == b"\n":
            end = size - 1
        position, start = end, 0
        block = 65536
        while position > 0:
            low = max(0, position - block)
            file.seek(low)
            newline = file.read(position - low).rfind(b"\n")
            if newline != -1:
                start = low + newline + 1
                break
            position = low
        file.seek(start)
        last = file.read(size - start)
        if last.endswith(b"\n") and (not last.strip() or _parses(last)):
            return
        file.truncate(start)


class RunLockedError(ProjectError):
    """Another command works on the run: a run, a resume or a rescore of it."""


_HELD: dict[Path, list[Any]] = {}
_GUARD = threading.Lock()


def _holder(file: IO[str]) -> str:
    file.seek(0)
    try:
        raw = json.loads(file.read(4096) or "{}")
    except ValueError:
        raw = {}
    if not isinstance(raw, dict) or "pid" not in raw:
        return "another command"
    return (
        f"soev-evals {raw.get('purpose', '?')} (pid {raw['pid']} on {raw.get('host', '?')}, "
        f"since {raw.get('since', '?')})"
    )


@contextmanager
def run_lock(run_dir: Path, purpose: str) -> Iterator[None]:
    """Hold the run's exclusive lock while the block runs; the OS drops it if the process dies.

    The lock is `fcntl.flock` on `<run>/lock`, which records who holds it. It is
    re-entrant within one process, so a command that holds it can run Dagster steps that
    take it too; another process gets `RunLockedError` at once.

    Raises:
        RunLockedError: another process holds the lock; the message says who.
    """
    key = run_dir.resolve()
    with _GUARD:
        entry = _HELD.get(key)
        if entry is not None:
            entry[1] += 1
        else:
            with naming(run_dir / LOCK):
                run_dir.mkdir(parents=True, exist_ok=True)
                file = (run_dir / LOCK).open("a+", encoding="utf-8")
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(file)
                file.close()
                raise RunLockedError(
                    f"{run_dir}: run {run_dir.name!r} is in use by {holder}; "
                    "wait for it to end, then try again"
                ) from None
            file.seek(0)
            file.truncate()
            file.write(
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "host": socket.gethostname(),
                        "purpose": purpose,
                        "since": datetime.now(UTC).isoformat(timespec="seconds"),
                    }
                )
            )
            file.flush()
            _HELD[key] = [file, 1]
    try:
        yield
    finally:
        with _GUARD:
            entry = _HELD[key]
            entry[1] -= 1
            if entry[1] == 0:
                del _HELD[key]
                if not (run_dir / MANIFEST).exists():
                    # refused before it was archived: leave no folder behind
                    with suppress(OSError):
                        (run_dir / LOCK).unlink()
                        run_dir.rmdir()
                fcntl.flock(entry[0].fileno(), fcntl.LOCK_UN)
                entry[0].close()


class RunArchive:
    """One run's folder: its manifest, its evidence and its scorings."""

    def __init__(self, runs_dir: Path, run_id: str) -> None:
        self.run_id = check_run_id(run_id)
        self.runs_dir = runs_dir
        self.path = runs_dir / run_id

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def evidence_path(self) -> Path:
        return self.path / EVIDENCE

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def locked(self, purpose: str) -> AbstractContextManager[None]:
        """The run's exclusive lock (see `run_lock`), for `purpose`: run, resume or rescore."""
        return run_lock(self.path, purpose)

    def create(self, manifest: Manifest) -> None:
        """Make the run's folder and write its manifest. Raises when the run exists."""
        if self.exists():
            raise ProjectError(f"{self.path}: run {self.run_id!r} already exists")
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self.manifest_path, manifest.model_dump(mode="json"))
        self.evidence_path.touch()

    def manifest(self) -> Manifest:
        """Read the manifest. Raises `ProjectError` when the run does not exist or is invalid."""
        if not self.exists():
            raise ProjectError(f"{self.runs_dir}: no run {self.run_id!r}")
        try:
            return Manifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise ProjectError(
                f"{self.manifest_path}: not a valid manifest ({exc.errors()[0]['msg']})"
            ) from None

    def evidence_writer(self) -> EvidenceWriter:
        return EvidenceWriter(self.evidence_path)

    def iter_evidence(self) -> Iterator[Evidence]:
        """Yield the archived evidence a line at a time.

        The last line is skipped when it does not decode or parse (a crash cut it short),
        never fatal (SPEC.md section 7). A broken line with lines after it is damage, not a
        crash: it stops the reading with an error that names its line number. When an
        attempt appears twice, both are yielded.

        Raises:
            ProjectError: a line other than the last is not valid evidence.
        """
        if not self.evidence_path.exists():
            return
        broken: int | None = None
        with naming(self.evidence_path), self.evidence_path.open("rb") as lines:
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
                yield evidence

    def count_evidence(self) -> int:
        """The number of complete evidence lines, without parsing them (for progress)."""
        if not self.evidence_path.exists():
            return 0
        with naming(self.evidence_path), self.evidence_path.open("rb") as lines:
            return sum(1 for line in lines if line.endswith(b"\n") and line.strip())

    def completed(self) -> set[tuple[str, int]]:
        """The (case id, attempt) pairs that have evidence."""
        return {(evidence.case_id, evidence.attempt) for evidence in self.iter_evidence()}

    # Scorings

    @property
    def scorings_path(self) -> Path:
        return self.path / SCORINGS

    def scorings(self) -> list[Path]:
        """The scoring folders, oldest first."""
        if not self.scorings_path.exists():
            return []
        return sorted(
            path for path in self.scorings_path.iterdir() if path.is_dir() and path.name.isdigit()
        )

    def new_scoring(self) -> Path:
        """Make the next scoring folder (0001, 0002, ...) and return it."""
        existing = self.scorings()
        number = int(existing[-1].name) + 1 if existing else 1
        path = self.scorings_path / f"{number:04d}"
        path.mkdir(parents=True, exist_ok=False)
        return path

    def latest_report_path(self) -> Path | None:
        """The report of the latest complete scoring, or None when the run was never scored."""
        for scoring in reversed(self.scorings()):
            if (scoring / REPORT).exists():
                return scoring / REPORT
        return None

    def latest_report(self) -> dict[str, Any] | None:
        """The latest report.json as it is: without the case list (see `read_report`)."""
        path = self.latest_report_path()
        if path is None:
            return None
        result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return result


def list_runs(runs_dir: Path) -> list[tuple[RunArchive, Manifest]]:
    """The runs in `runs_dir` with their manifests, each read once, oldest first."""
    if not runs_dir.exists():
        return []
    runs = []
    for path in runs_dir.iterdir():
        if path.is_dir() and RUN_ID.fullmatch(path.name) and (path / MANIFEST).exists():
            run = RunArchive(runs_dir, path.name)
            runs.append((run, run.manifest()))
    return sorted(runs, key=lambda pair: (pair[1].created_at, pair[0].run_id))
