"""One runtime provider opened for several steps, on an event loop of its own.

A Dagster run executes a run's steps (attempt, grade, aggregate) one after another in one
process, but the seeds promise a runtime provider that "the command runs inside": its
clients stay open across the steps. The session owns one event loop in a background
thread; each step runs its async work there, and the provider's context manager is entered
on first use and left when the session closes. (`soev_pipeline.api` runs every step in one
coroutine and needs no session.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

from soev_pipeline.project import LoadedProject

from .providers import Operation, RuntimeBindings
from .resolve import open_runtime

T = TypeVar("T")
CANCEL_GRACE_S = 30.0
"""How long an interrupted step waits for its work to finish cancelling (deleting threads)."""


class RuntimeSession:
    """The event loop and the opened runtime provider of one Dagster run."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stack: AsyncExitStack | None = None
        self._bindings: RuntimeBindings | None = None
        self._lock = threading.Lock()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the session's loop and return its result.

        When the waiting thread is interrupted (a terminated Dagster run), the work is
        cancelled and given `CANCEL_GRACE_S` to clean up before the interruption goes on.
        """
        loop = self._ensure_loop()
        finished = threading.Event()

        async def guarded() -> T:
            try:
                return await work
            finally:
                finished.set()

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(guarded(), loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                finished.wait(CANCEL_GRACE_S)
            raise

    async def bindings(
        self,
        loaded: LoadedProject,
        name: str | None,
        operation: Operation,
        state: Path,
        *,
        offline: bool = False,
    ) -> RuntimeBindings:
        """The provider's bindings, opening the provider called `name` the first time.

        Later calls get the same bindings: a run opens one runtime, the one its first step
        asked for (see `open_runtime` for `offline` and the errors).
        """
        if self._bindings is not None:
            return self._bindings
        stack = AsyncExitStack()
        try:
            bindings = await stack.enter_async_context(
                open_runtime(loaded, name, operation, state, offline=offline)
            )
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._bindings = stack, bindings
        return bindings

    def close(self) -> None:
        """Leave the provider's context and stop the loop."""
        if self._loop is None:
            return
        loop = self._loop
        try:
            if self._stack is not None:
                self.run(self._stack.aclose())
            self.run(loop.shutdown_asyncgens())
        finally:
            self._stack = self._bindings = None
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join()
            loop.close()
            self._loop = self._thread = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="soev-runtime", daemon=True
                )
                self._thread.start()
            return self._loop
