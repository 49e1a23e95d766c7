"""Where the run archive's bytes live: one port, `ArchiveStore`, and its two stores, chosen
by the runs folder (`open_store`): a folder on disk, or an `s3://bucket/prefix` URL."""

from __future__ import annotations

import threading
from pathlib import Path

from soev_pipeline.project.paths import RunsDir

from .base import ArchiveStore, EvidenceSink, RunLockedError
from .local import LocalStore
from .objects import ObjectStore

_OPEN: dict[str, ObjectStore] = {}
_GUARD = threading.Lock()


def open_store(runs_dir: RunsDir) -> ArchiveStore:
    """The store of `runs_dir`: an object-store URL (a `str`, see `project.paths.RunsDir`)
    gets this process's one `ObjectStore` for it; a path a `LocalStore`."""
    if isinstance(runs_dir, Path):
        return LocalStore(runs_dir)
    with _GUARD:
        store = _OPEN.get(runs_dir)
        if store is None:
            store = _OPEN[runs_dir] = ObjectStore(runs_dir)
        return store


def object_store_of(run_dir: Path) -> tuple[str, str] | None:
    """The runs URL and run id whose cache folder `run_dir` is, if an object store's."""
    with _GUARD:
        for url, store in _OPEN.items():
            if run_dir.parent == store.cache:
                return url, run_dir.name
    return None


__all__ = [
    "ArchiveStore",
    "EvidenceSink",
    "LocalStore",
    "ObjectStore",
    "RunLockedError",
    "object_store_of",
    "open_store",
]
