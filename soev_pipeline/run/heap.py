"""Keep the cyclic garbage collector out of the way: long-lived objects out of its full
collections, and no collection at all in the steps after a run's last attempt."""

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


_paused = 0
_was_enabled = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: the steps of a run after its last attempt.

    Those steps (the report, the pages, the record alongside them) allocate a few hundred
    thousand objects that reference counting frees, so a collection there finds next to
    nothing, yet it walks every young object of the run: a young collection fell in the
    report step of nearly every 2,000-attempt run (about 0.03 s), and with Python's own
    thresholds a full one fell in every second pages step (0.07 to 0.17 s, the spread of
    its timings). What the steps leave in cycles is collected after them: inside
    `frozen_heap` (as in `api.execute`) the pause ends by freezing what the steps made
    with the rest of the heap, which its end unfreezes, since the collector switched on
    again would otherwise walk all of it at the next allocation (0.015 s after the pages of
    a 2,000-attempt run). Nested and concurrent uses share one pause, which ends when the
    last does; a collector that was off before the first stays off.
    """
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                if _depth > 0:
                    gc.freeze()
                gc.enable()
