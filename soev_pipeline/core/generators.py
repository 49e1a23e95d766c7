"""Closing the async generators a run leaves half read, without waking its event loop.

Every streamed turn leaves async generators half read: the answer is read up to its final
status event, and httpx's `aiter_bytes` and the layers beneath it (`aiter_raw`, the
client's bound stream, the transport's stream) are dropped where they stopped. Python then
hands each one to the event loop's finalizer hook, which asyncio implements as
`call_soon_threadsafe(create_task, agen.aclose())`: thread-safe, so each call also writes
a byte to the loop's wake-up pipe, which the loop then selects and reads, even though it
is the loop's own thread that dropped the generator. Four generators a turn, 8,000 wake-ups
for a 2,000-attempt run: 0.15–0.2 s of its 50 ms bench's attempt phase
(`bench/throughput.py`).

`LoopGenerators` takes over both hooks while a coroutine runs (`tracked`): a generator
dropped on the loop's thread is closed by a task scheduled with `call_soon`, one dropped on
another thread as asyncio does. The generators still open when the loop's work is over are
closed by `shutdown`, which the loop's owner calls where it calls
`loop.shutdown_asyncgens`, after it cancelled the tasks left (one of which may be
iterating one). What a generator does when closed is unchanged; only how the loop learns
of it is.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopGenerators:
    """The async generators first iterated on one event loop's thread, and their closing."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()
        self._open: weakref.WeakSet[AsyncGenerator[Any, Any]] = weakref.WeakSet()

    def first_iteration(self, generator: AsyncGenerator[Any, Any]) -> None:
        self._open.add(generator)

    def finalize(self, generator: AsyncGenerator[Any, Any]) -> None:
        """Schedule the closing of `generator`, dropped without being closed."""
        self._open.discard(generator)
        if self._loop.is_closed():
            return
        if threading.get_ident() == self._thread:
            self._loop.call_soon(self._loop.create_task, generator.aclose())
        else:
            self._loop.call_soon_threadsafe(self._loop.create_task, generator.aclose())

    async def close_open(self) -> None:
        """Close the generators still open, as `loop.shutdown_asyncgens` does."""
        generators = list(self._open)
        self._open.clear()
        if not generators:
            return
        results = await asyncio.gather(
            *(generator.aclose() for generator in generators), return_exceptions=True
        )
        for generator, result in zip(generators, results, strict=False):
            if isinstance(result, Exception):
                self._loop.call_exception_handler(
                    {
                        "message": f"an error occurred during closing of {generator!r}",
                        "exception": result,
                        "asyncgen": generator,
                    }
                )

    async def track(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` with the hooks of this object installed on the loop's thread; the
        hooks the thread had come back when it ends."""
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=self.first_iteration, finalizer=self.finalize)
        try:
            return await work
        finally:
            sys.set_asyncgen_hooks(*hooks)


_TRACKED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopGenerators] = (
    weakref.WeakKeyDictionary()
)


async def tracked(work: Coroutine[Any, Any, T]) -> T:
    """`work`, its half-read async generators closed without waking the loop (see the
    module); to be awaited on the loop that runs it, whose owner then calls `shutdown`."""
    loop = asyncio.get_running_loop()
    generators = _TRACKED.setdefault(loop, LoopGenerators(loop))
    return await generators.track(work)


async def shutdown() -> None:
    """Close the async generators that `tracked` work on the running loop left open, as
    `loop.shutdown_asyncgens` closes its own: call it beside that, once the tasks left
    are cancelled."""
    generators = _TRACKED.pop(asyncio.get_running_loop(), None)
    if generators is not None:
        await generators.close_open()
