"""The run archive on disk (docs/runs.md#the-archive).

    runs/<run_id>/manifest.json
    runs/<run_id>/evidence.jsonl               one attempt a line, appended as each finishes
    runs/<run_id>/scorings/<NNNN>/verdicts.jsonl
    runs/<run_id>/scorings/<NNNN>/report.json  the report without its case list
    runs/<run_id>/scorings/<NNNN>/scoring.json
    runs/<run_id>/lock                         who holds the run (see `run_lock`)

Evidence is streamed: written a line at a time and flushed, read a line at a time. The file
is only ever appended to: an attempt that did not run and is run once more gets a second
line, and the last line of a (case, attempt) is the one that counts (`iter_attempts`). A
rescore adds a scoring and keeps the earlier ones; the report of a run is that of its latest
scoring.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
import stat
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from soev_pipeline.core.chars import scrub
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

from .manifest import Manifest

logger = logging.getLogger(__name__)

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_EVIDENCE_HEAD = re.compile(
    rb'\{"case_id":"([^"\\]+)","suite":"[^"\\]*","split":"[a-z]+","attempt":(\d+),'
)
"""The start of an evidence line as `Evidence.model_dump_json` writes it: its case and attempt
are read without decoding the rest."""
MANIFEST = "manifest.json"
EVIDENCE = "evidence.jsonl"
SCORINGS = "scorings"
VERDICTS = "verdicts.jsonl"
REPORT = "report.json"
SCORING = "scoring.json"
LOCK = "lock"
MAX_JSON_BYTES = 64 * 1024 * 1024
"""The largest `manifest.json` or `report.json` that is read: a manifest of a million
cases takes a tenth of it; a larger one was not written by a run."""


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
    """Write `value` as indented JSON to `path` through a temporary file and a rename.

    Secrets are redacted, and a lone surrogate is replaced, so that the file can be written.
    """
    temporary = path.with_name(path.name + ".tmp")
    text = redact(scrub(json.dumps(value, indent=2, ensure_ascii=False))) + "\n"
    with naming(path):
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)


def check_regular(path: Path, *, max_bytes: int | None = None) -> None:
    """Refuse a file of the archive that is not a regular file, or is larger than `max_bytes`.

    A FIFO or a device in the place of an archive file would block the reader or never end;
    a huge file would fill the memory. Only tampering puts them there.

    Raises:
        ProjectError: one line naming the file and what is wrong with it.
    """
    with naming(path):
        info = path.stat()
    _check_stat(path, info, max_bytes)


def _check_stat(path: Path, info: os.stat_result, max_bytes: int | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ProjectError(f"{path}: not a regular file; a run archive holds only files")
    if max_bytes is not None and info.st_size > max_bytes:
        raise ProjectError(
            f"{path}: {info.st_size} bytes, more than the {max_bytes} such a file may have"
        )


def open_regular(path: Path, *, max_bytes: int | None = None) -> IO[bytes]:
    """Open a file of the archive for reading, refusing what `check_regular` refuses.

    The file is opened without blocking and checked through its descriptor, so a FIFO is
    refused at once, and a file swapped after a check cannot slip past it.

    Raises:
        ProjectError: the file is not a regular file, or is too large.
        OSError: it cannot be opened (with its name).
    """
    with naming(path):
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check_stat(path, os.fstat(descriptor), max_bytes)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_json_file(path: Path, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value of an archive file, read as `open_regular` allows.

    Raises:
        ProjectError: the file is refused (see `open_regular`) or is not UTF-8 JSON.
        OSError: it cannot be read.
    """
    with open_regular(path, max_bytes=max_bytes) as file, naming(path):
        data = file.read()
    try:
        return json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError too
        raise ProjectError(f"{path}: not a JSON file ({type(exc).__name__})") from None


class EvidenceWriter:
    """Appends evidence lines, flushing each, so a crash loses at most the attempt in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.exists():
            check_regular(path)
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


def _evidence_key(line: bytes) -> tuple[str, int] | None:
    """(case id, attempt) of an evidence line; None for one that does not read."""
    head = _EVIDENCE_HEAD.match(line)
    if head is not None:
        return head.group(1).decode("utf-8", "replace"), int(head.group(2))
    try:
        raw = json.loads(line)
        return str(raw["case_id"]), int(raw.get("attempt", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


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

    def evidence_writer(self) -> EvidenceWriter:
        return EvidenceWriter(self.evidence_path)

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
        return self._scan()[0]

    def iter_attempts(self, *, warn: bool = True) -> Iterator[Evidence]:
        """Yield each archived (case, attempt) once: its last line, in the order of the file.

        This is how every reader counts the run's attempts (grading, the report's ledger):
        a line that a later one of the same attempt replaces is passed over. Otherwise as
        `iter_evidence`.
        """
        replaced = self.superseded()
        for number, evidence in self._numbered(warn=warn):
            if number not in replaced:
                yield evidence

    def count_attempts(self) -> int:
        """About how many lines `iter_attempts` yields, one per archived (case, attempt),
        counted without decoding the lines' bodies (for progress)."""
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
                key = _evidence_key(line)
                pending = None if key is None else (number, key)
                final = line
        if pending is not None and final.endswith(b"\n") and _parses(final):
            count(*pending)
        return frozenset(replaced), len(last)

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
        """The report of the latest complete scoring, or None when the run was never scored.

        Raises:
            ProjectError: its `report.json` or `verdicts.jsonl` is not a regular file, or
                the report is larger than `MAX_JSON_BYTES`: so that every reader of a
                report refuses them at once, with one line.
        """
        for scoring in reversed(self.scorings()):
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
