"""What one process knows of the objects of the runs under one prefix: the runs' listings,
reused for a moment and asked for ahead, and the objects it downloaded or sent, kept in
its cache folder."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

from soev_pipeline.core.errors import ProjectError

from .bucket import Bucket
from .files import naming

LISTING_TTL_S = 1.0
"""How long one process reuses a run's listing before asking the store again (a viewer's
page asks for several things of one run); its own writes renew it at once."""
AHEAD = 4
"""Listings asked for ahead at once."""


class Listings:
    """The runs' listings and this process's copies of their objects (see the module)."""

    def __init__(self, bucket: Bucket, cache: Path) -> None:
        self.bucket, self.cache = bucket, cache
        self.clock = time.monotonic  # when a listing was taken; a test sets its own
        self._guard = threading.Lock()
        self._listings: dict[str, tuple[float, list[str]]] = {}
        self._coming: dict[str, Future[list[str]]] = {}
        self._versions: dict[str, int] = {}
        self._ahead = ThreadPoolExecutor(AHEAD, thread_name_prefix="soev-list")

    def run(self, run_id: str, *, fresh: bool = False) -> list[str]:
        """The names of the run's objects, below `<run_id>/`; a listing already on its way
        (`ahead`) is waited for rather than asked again."""
        with self._guard:
            found = self._listings.get(run_id)
            if found is not None and not fresh and self.clock() - found[0] < LISTING_TTL_S:
                return found[1]
            coming = None if fresh else self._coming.get(run_id)
            version = self._versions.get(run_id, 0)
        if coming is not None:
            with suppress(ProjectError):
                return coming.result()
        return self._list(run_id, version)

    def _list(self, run_id: str, version: int) -> list[str]:
        started = self.clock()
        names = [name.split("/", 1)[1] for name in self.bucket.list(f"{run_id}/")]
        with self._guard:
            if self._versions.get(run_id, 0) == version:  # no write of ours since it began
                self._listings[run_id] = (started, names)
        return names

    def ahead(self, run_id: str) -> None:
        """Start listing the run in the background, unless a listing is at hand: a reader
        that opens a run lists it next, so its first page waits for one request less."""
        with self._guard:
            found = self._listings.get(run_id)
            if found is not None and self.clock() - found[0] < LISTING_TTL_S:
                return
            coming = self._coming.get(run_id)
            if coming is not None and not coming.done():
                return
            version = self._versions.get(run_id, 0)
            self._coming[run_id] = self._ahead.submit(self._list, run_id, version)

    def runs(self) -> list[str]:
        """The folders under the prefix (listed at most once a `LISTING_TTL_S`)."""
        with self._guard:
            found = self._listings.get("")
        if found is None or self.clock() - found[0] >= LISTING_TTL_S:
            started = self.clock()
            names = [name.rstrip("/") for name in self.bucket.list("", delimiter=True)]
            found = (started, names)
            with self._guard:
                self._listings[""] = found
        return found[1]

    def changed(self, run_id: str) -> None:
        """This process wrote to the run (`""`: added a run): list it again."""
        with self._guard:
            self._listings.pop(run_id, None)
            self._coming.pop(run_id, None)
            self._versions[run_id] = self._versions.get(run_id, 0) + 1

    def kept(self, run_id: str) -> Path:
        """Where this process keeps the objects it downloaded whole or sent (batches,
        compactions)."""
        return self.cache / ".objects" / run_id

    def download(self, run_id: str, name: str, path: Path) -> bool:
        """Write the object to `path` (through a rename); False when it is gone."""
        found = self.bucket.get(f"{run_id}/{name}")
        if found is None:
            return False
        write(path, found[0])
        return True

    def keep(self, run_id: str, key: str, data: bytes) -> None:
        """Keep an object this process sent or read as if it had downloaded it: the readers
        after it (grading) need not download it again."""
        write(self.kept(run_id) / key, data)


def write(path: Path, data: bytes) -> None:
    """Write `path` through a rename, so that no reader sees it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{threading.get_ident()}.tmp")
    with naming(path):
        temporary.write_bytes(data)
        os.replace(temporary, path)
