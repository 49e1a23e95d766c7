"""The judge cache: every valid answer, stored under the hash of the exact question.

A question is the model, the system message, the user message and the answer schema. The
same question gets the same stored answer, so a rescore whose requests did not change asks
the model nothing, and after one rubric edit only that criterion's requests go out. The
judge stores an answer only after it validated it, so an unusable answer is asked again.

The store is one SQLite file in the project's state folder. Each write is one statement in
autocommit mode on a WAL journal, so two processes can share the file; within one process a
lock serialises the connection, and the calls run in a worker thread so that a busy file
never blocks the event loop.

The cache only saves calls, so damage to it costs calls, never a command: an entry that
cannot be read (not UTF-8 text, edited by hand) is dropped with one warning and asked
again, and a file that is not a SQLite database is put aside (`*.broken-<time>`, with a
warning) and a new one started.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from pydantic import JsonValue

from soev_pipeline.core.canonical import digest

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    model TEXT,
    answer TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID
"""


def cache_key(
    *,
    model: str | None,
    system: str,
    user: str,
    schema: Mapping[str, JsonValue],
    repeat: int = 0,
) -> str:
    """Return the SHA-256 of the canonical JSON of the question.

    `repeat` numbers the asks of one request under `judge.repeats`: the first ask shares
    its key with an ordinary request, each further ask has a key of its own, so repeated
    asks stay independent answers and a rescore still finds every one of them.
    """
    question: dict[str, JsonValue] = {
        "model": model,
        "system": system,
        "user": user,
        "schema": dict(schema),
    }
    if repeat:
        question["repeat"] = repeat
    return digest(question)


class JudgeCache:
    """A SQLite file of judge answers by question key.

    Open it once per command and close it at the end (or use it as a context manager).
    The parent folder is made when it is missing.
    """

    def __init__(self, path: Path, *, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = self._connect(busy_timeout_s)
        except sqlite3.DatabaseError as exc:
            if "not a database" not in str(exc) and "malformed" not in str(exc):
                raise
            aside = path.with_name(
                f"{path.name}.broken-{datetime.now(UTC).strftime('%Y%m%dt%H%M%S')}"
            )
            path.replace(aside)
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            logger.warning(
                "%s: the judge cache is not a SQLite database; put aside as %s, a new one started",
                path,
                aside.name,
            )
            self._conn = self._connect(busy_timeout_s)

    def _connect(self, busy_timeout_s: float) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            # answers come back as bytes, so that one that is not UTF-8 is a miss, not an error
            conn.text_factory = bytes
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    async def get(self, key: str) -> str | None:
        """Return the stored answer for `key`, or None."""
        return await asyncio.to_thread(self._get, key)

    async def drop(self, key: str) -> None:
        """Forget the answer stored for `key`, if any."""
        await asyncio.to_thread(self._drop, key)

    async def put(self, key: str, answer: str, *, task: str, model: str | None) -> None:
        """Store `answer` for `key`; an answer already stored for it is kept."""
        await asyncio.to_thread(self._put, key, answer, task, model)

    def count(self) -> int:
        """Return the number of stored answers."""
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the file. The cache cannot be used afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            if not isinstance(row[0], bytes):
                raise TypeError(type(row[0]).__name__)
            return row[0].decode("utf-8")
        except (TypeError, UnicodeDecodeError):
            logger.warning(
                "%s: an entry of the judge cache is not UTF-8 text; dropped, asked again",
                self.path,
            )
            self._drop(key)
            return None

    def _drop(self, key: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM answers WHERE key = ?", (key,))

    def _put(self, key: str, answer: str, task: str, model: str | None) -> None:
        created = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO answers (key, task, model, answer, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, task, model, answer, created),
            )
