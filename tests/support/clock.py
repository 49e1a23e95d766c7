"""An event loop with a clock of its own, for the tests of timeouts, deadlines and waits.

`VirtualClockLoop` never sleeps: when nothing can run, no file is ready and no work of its
executor (`asyncio.to_thread`, as the fakes' scripts run) is under way, it moves its clock
(`loop.time()`, which asyncio's timers, `asyncio.sleep` and `asyncio.timeout` read) on to
the next timer at once. A wait of 30 s takes no time, and time passes only by waiting, so
a test can say that a turn took exactly its deadline, or that a timeout fired only when
nothing else could happen, however slow or loaded the machine. It is for code that talks
to nothing outside the process (the fakes' MockTransport): a socket that is slow to answer
would see the clock run ahead of it.

    evidence = on_virtual_clock(arm.attempt(case, attempt=0, fields={}))
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose clock starts at 0 and moves only to the next timer."""

    def __init__(self) -> None:
        self.now = 0.0
        self.threads_working = 0
        super().__init__(_Selector(self))

    def time(self) -> float:
        return self.now

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> asyncio.Future[Any]:
        """As asyncio's, counting the work under way: the clock waits for it."""
        future = super().run_in_executor(executor, func, *args)
        self.threads_working += 1
        future.add_done_callback(self._thread_done)
        return future

    def _thread_done(self, future: asyncio.Future[Any]) -> None:
        self.threads_working -= 1


class _Selector(selectors.BaseSelector):
    """A selector that, where the loop would wait for a timer, moves the loop's clock to it."""

    def __init__(self, loop: VirtualClockLoop) -> None:
        self._loop = loop
        self._selector = selectors.DefaultSelector()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer: wait for a file, as a real loop does
            return self._selector.select()
        if self._loop.threads_working:  # a thread's work takes no time on this clock
            return self._selector.select(timeout)
        ready = self._selector.select(0)
        if not ready:
            self._loop.now += timeout
        return ready

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._selector.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._selector.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._selector.modify(fileobj, events, data)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._selector.get_map()

    def close(self) -> None:
        self._selector.close()


def on_virtual_clock(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` on a `VirtualClockLoop`."""
    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        return runner.run(coroutine)
