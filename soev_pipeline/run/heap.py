"""Keep long-lived objects out of the garbage collector's full collections."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects that exist now (the project, the libraries) out of garbage collection.

    The attempt, grading and report phases allocate many short-lived objects; without this,
    every full collection walks the whole loaded project, its corpus indexes and Dagster too
    (about 10% of the attempt phase on a large project, a third of reading a report back).
    Nested and concurrent uses share one freeze: the heap is unfrozen when the last ends.
    """
    global _depth
    with _lock:
        if _depth == 0:
            gc.freeze()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
