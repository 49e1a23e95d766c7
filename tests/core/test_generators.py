"""Half-read async generators are closed without waking the loop (`core.generators`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
from collections.abc import AsyncIterator

import pytest

from soev_pipeline.api import run_sync
from soev_pipeline.core.generators import tracked


class Closings:
    """Async generators that note when their `finally` runs, on a loop that counts the
    calls made to wake it from another thread."""

    def __init__(self) -> None:
        self.closed: list[str] = []
        self.wakeups = 0

    async def waiting(self, name: str) -> AsyncIterator[int]:
        """A generator that waits inside itself for each number (and so is running, not
        paused at a `yield`, while its consumer waits for the next)."""
        try:
            while True:
                await asyncio.sleep(3600)
                yield 1
        finally:
            self.closed.append(name)

    async def numbers(self, name: str) -> AsyncIterator[int]:
        try:
            for number in range(10):
                yield number
        finally:
            self.closed.append(name)

    def run(self, work: object, *, hooked: bool = True) -> object:
        """Run `work` on a new loop, through `tracked` unless `hooked` is False, and end
        the loop as its owner does (`loop.shutdown_asyncgens`)."""
        loop = asyncio.new_event_loop()
        threadsafe = loop.call_soon_threadsafe

        def counted(*args: object, **kwargs: object) -> object:
            self.wakeups += 1
            return threadsafe(*args, **kwargs)  # type: ignore[arg-type]

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        try:
            return loop.run_until_complete(tracked(work) if hooked else work)  # type: ignore[arg-type]
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


@pytest.mark.parametrize(("hooked", "wakeups"), [(True, 0), (False, 1)])
def test_a_generator_dropped_on_the_loops_thread_is_closed_without_waking_the_loop(
    hooked: bool, wakeups: int
) -> None:
    """Without the hooks (asyncio's own finalizer) the same generator wakes the loop: what
    the hooks save, and that the counter counts."""
    closings = Closings()

    async def work() -> None:
        numbers = closings.numbers("dropped")
        assert await numbers.__anext__() == 0
        del numbers  # half read, dropped: finalized at once
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert closings.closed == ["dropped"]

    closings.run(work(), hooked=hooked)
    assert closings.wakeups == wakeups


def test_a_generator_dropped_on_another_thread_wakes_the_loop_to_be_closed() -> None:
    closings = Closings()

    async def work() -> None:
        numbers = closings.numbers("elsewhere")
        await numbers.__anext__()
        box = [numbers]
        del numbers
        dropper = threading.Thread(target=box.clear)
        dropper.start()
        dropper.join()
        for _ in range(100):
            if closings.closed:
                break
            await asyncio.sleep(0.01)
        assert closings.closed == ["elsewhere"]

    closings.run(work())
    assert closings.wakeups == 1


def test_generators_left_open_are_closed_when_the_work_ends_and_the_hooks_restored() -> None:
    closings = Closings()
    kept: list[AsyncIterator[int]] = []
    before = sys.get_asyncgen_hooks()

    async def work() -> str:
        numbers = closings.numbers("kept")
        await numbers.__anext__()  # type: ignore[attr-defined]
        kept.append(numbers)
        return "done"

    assert closings.run(work()) == "done"
    assert closings.closed == ["kept"]
    assert sys.get_asyncgen_hooks() == before
    kept.clear()
    gc.collect()
    assert closings.closed == ["kept"]  # closed once


def test_a_generator_a_left_task_iterates_is_closed_once_the_task_is_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`run_sync` cancels the tasks its work left before it closes what they iterate: no
    generator is closed under its consumer, and nothing is logged."""
    closings = Closings()
    left: list[asyncio.Future[None]] = []

    async def work() -> str:
        async def consume() -> None:
            async for _ in closings.waiting("in use"):
                pass

        left.append(asyncio.ensure_future(consume()))
        await asyncio.sleep(0.01)
        return "done"

    with caplog.at_level("ERROR", logger="asyncio"):
        assert run_sync(work()) == "done"
        # the result comes back before the loop's thread has cleaned up: wait for it
        for thread in threading.enumerate():
            if thread.name == "soev-run":
                thread.join(60)
    assert closings.closed == ["in use"]
    assert not caplog.records


def test_a_cancelled_work_still_closes_what_it_left_open() -> None:
    closings = Closings()

    async def work() -> None:
        numbers = closings.numbers("cancelled")
        await numbers.__anext__()
        holder = [numbers]
        try:
            await asyncio.sleep(3600)
        finally:
            assert holder

    async def cancel_it() -> None:
        task = asyncio.ensure_future(tracked(work()))
        await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(cancel_it())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    assert closings.closed == ["cancelled"]
