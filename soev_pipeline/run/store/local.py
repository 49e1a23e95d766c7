"""The local store: a run archive in a folder on disk, guarded by `flock`.

<runs>/<run_id>/manifest.json
<runs>/<run_id>/evidence.jsonl      one attempt a line, appended and flushed as each ends
<runs>/<run_id>/scorings/<NNNN>/    verdicts.jsonl, scoring.json, report.json, report.html
<runs>/<run_id>/lock                who holds the run (see `run_lock`)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

from .base import RunLockedError
from .files import check_regular, drop_broken_last_line, naming, write_text_atomically

MANIFEST = "manifest.json"
EVIDENCE = "evidence.jsonl"
SCORINGS = "scorings"
LOCK = "lock"


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

    def append(self, evidence: Evidence, archived: Callable[[str], None] | None = None) -> None:
        line = redact(evidence.model_dump_json())
        with naming(self.path):
            self._file.write(line + "\n")
            self._file.flush()
        self.written += 1
        if archived is not None:
            archived(line)

    def check(self) -> None:
        """Nothing to check: `flock` holds the run until this process ends."""

    def flush(self) -> None:
        """Nothing waits: each line is flushed as it is appended."""

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


_HELD: dict[Path, list[Any]] = {}
_HOLDER_WAIT = 2.0
"""How long a refused command waits for the holder's record before it names no one."""
_GUARD = threading.Lock()


def _read_holder(file: IO[str]) -> dict[str, Any] | None:
    file.seek(0)
    try:
        raw = json.loads(file.read(4096) or "{}")
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("pid"), int):
        return None
    if raw.get("host") == socket.gethostname() and not _alive(raw["pid"]):
        return None  # a killed holder's record, about to be replaced by the new holder's
    return raw


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _holder(file: IO[str]) -> str:
    # the holder writes its record just after it takes the lock: a reader in between sees an
    # empty or half-written file, so it looks again for a moment before it gives up on a name
    raw = _read_holder(file)
    deadline = time.monotonic() + _HOLDER_WAIT
    while raw is None and time.monotonic() < deadline:
        time.sleep(0.01)
        raw = _read_holder(file)
    if raw is None:
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
                with suppress(OSError):
                    entry[0].truncate(0)  # no record of a holder that has let go
                fcntl.flock(entry[0].fileno(), fcntl.LOCK_UN)
                entry[0].close()


class LocalStore:
    """The runs of a folder on disk (see the module's docstring)."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir

    def where(self, run_id: str, name: str = "") -> str:
        path = self.runs_dir / run_id
        return str(path / name if name else path)

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def locked(self, run_id: str, purpose: str) -> AbstractContextManager[None]:
        return run_lock(self.run_dir(run_id), purpose)

    def has_manifest(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / MANIFEST).exists()

    def read_ahead(self, run_id: str) -> None:
        """Nothing to do: the folder is the archive."""

    def create_run(self, run_id: str, manifest: str) -> bool:
        path = self.run_dir(run_id)
        if (path / MANIFEST).exists():
            return False
        path.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path / MANIFEST, manifest)
        (path / EVIDENCE).touch()
        return True

    def evidence_writer(self, run_id: str) -> EvidenceWriter:
        return EvidenceWriter(self.run_dir(run_id) / EVIDENCE)

    def refresh_evidence(self, run_id: str) -> None:
        """Nothing to do: the folder is the archive."""

    def refresh_scorings(self, run_id: str, *, verdicts: bool = True) -> None:
        """Nothing to do: the folder is the archive."""

    def fetch(self, run_id: str, name: str) -> None:
        """Nothing to do: the folder is the archive."""

    def new_scoring(self, run_id: str) -> Path:
        """The next scoring folder, made only if absent (`mkdir` refuses an existing one)."""
        folder = self.run_dir(run_id) / SCORINGS
        numbers = (
            [int(path.name) for path in folder.iterdir() if path.name.isdigit()]
            if (folder.exists())
            else []
        )
        path = folder / f"{max(numbers, default=0) + 1:04d}"
        path.mkdir(parents=True, exist_ok=False)
        return path

    def discard_scoring(self, run_id: str, scoring: Path) -> None:
        shutil.rmtree(scoring, ignore_errors=True)

    def commit(self, run_id: str, scoring: Path, names: Sequence[str]) -> None:
        """Nothing to publish: the files were written in place, `report.json` last."""

    def run_ids(self) -> list[str]:
        if not self.runs_dir.exists():
            return []
        return [
            path.name
            for path in self.runs_dir.iterdir()
            if path.is_dir() and (path / MANIFEST).exists()
        ]
