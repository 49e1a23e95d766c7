"""A progress line on the terminal for attempts and grading."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from soev_pipeline.run.progress import Progress, Step


class TerminalProgress(Progress):
    """Redraws one line on `stream` when it is a terminal; prints nothing otherwise.

    Shows counts only, never case ids, so it is safe for the test split.
    """

    def __init__(self, stream: TextIO, *, min_interval: float = 0.1) -> None:
        self._stream = stream
        self._live = stream.isatty()
        self._min_interval = min_interval
        self._last = 0.0
        self._started = time.monotonic()
        self._shown = False

    def _draw(self, label: str, done: int, total: int, extra: str = "") -> None:
        if not self._live:
            return
        now = time.monotonic()
        if done != total and now - self._last < self._min_interval:
            return
        self._last = now
        width = 30
        filled = int(width * done / total) if total else width
        bar = "#" * filled + "." * (width - filled)
        elapsed = now - self._started
        rate = f"{done / elapsed:.1f}/s" if elapsed > 0 and done else ""
        self._stream.write(f"\r{label:<9}[{bar}] {done}/{total} {rate} {extra}\033[K")
        self._stream.flush()
        self._shown = True

    def phase(self, text: str) -> None:
        self._end_line()
        self._started = time.monotonic()
        if self._live:
            self._stream.write(f"{text}\n")
            self._stream.flush()

    def attempts(self, done: int, total: int, failed: int) -> None:
        extra = f"({failed} failed)" if failed else ""
        self._draw("attempts", done, total, extra)

    def graded(self, done: int, total: int) -> None:
        self._draw("grading", done, total)

    def _end_line(self) -> None:
        if self._shown:
            self._stream.write("\n")
            self._stream.flush()
            self._shown = False

    def close(self) -> None:
        self._end_line()


class Preloading(TerminalProgress):
    """The terminal display, which also calls `preload` while the attempts run.

    What a command needs after its run (the HTML report's templates; Dagster, to record it,
    when no process of its own does: `recording`) takes a while to import: on a thread of
    its own, the import overlaps the attempts, which mostly wait on the system under test
    (`bench/throughput.py` has the figures). It begins once the first attempt is archived,
    when the first requests are out and their connections open, or when grading starts,
    whichever comes first; grading waits for it, before it may fork its workers: a fork in
    the middle of an import could leave a worker with a module half made. An error of
    `preload` is dropped: what failed fails again where it is needed.

    While it runs, the interpreter switches threads every `PRELOAD_SWITCH_S` instead of
    every 5 ms: the event loop that sends the attempts gives the interpreter's lock up at
    each read and write, and would otherwise wait up to 5 ms to get it back from the
    import each time.
    """

    def __init__(self, stream: TextIO, preload: Callable[[], object]) -> None:
        super().__init__(stream)
        self._thread = threading.Thread(
            target=_quietly, args=(preload,), name="soev-preload", daemon=True
        )
        self._starting = threading.Lock()

    def _begin(self) -> None:
        with self._starting:
            if self._thread.ident is None:
                self._thread.start()

    def attempts(self, done: int, total: int, failed: int) -> None:
        super().attempts(done, total, failed)
        if self._thread.ident is None:
            self._begin()

    def started(self, step: Step) -> None:
        if step == "grade":
            self._begin()
            self._thread.join()


PRELOAD_SWITCH_S = 0.0002
"""The interpreter's switch interval while `Preloading` imports (`sys.setswitchinterval`)."""


def _quietly(preload: Callable[[], object]) -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, PRELOAD_SWITCH_S))
    try:
        preload()
    except Exception:  # done again where it is needed, and failing there
        return
    finally:
        sys.setswitchinterval(interval)
