"""One runtime provider per command, opened once, on an event loop of its own.

A command's work runs in several steps (attempt, grade, aggregate), but the seeds promise a
runtime provider that "the command runs inside": its clients stay open across the steps.
The session owns one event loop in a background thread; every step submits its async work
there, and the provider's context manager is entered on first use and left when the
session closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

from soev_pipeline.core.errors import ArmError, JudgeError
from soev_pipeline.project import LoadedProject

from .builtin import open_project_judge
from .providers import Operation, RuntimeBindings
from .resolve import resolve_runtime

T = TypeVar("T")
CANCEL_GRACE_S = 30.0
"""How long an interrupted step waits for its work to finish cancelling (deleting threads)."""


class RuntimeSession:
    """The event loop and the opened runtime provider of one command."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stack: AsyncExitStack | None = None
        self._bindings: RuntimeBindings | None = None
        self._lock = threading.Lock()
        self._pending: dict[concurrent.futures.Future[Any], threading.Event] = {}

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the session's loop and return its result.

        When the waiting thread is interrupted (Ctrl-C), the work is cancelled and given
        `CANCEL_GRACE_S` to clean up before the interruption goes on.
        """
        future, finished = self._start(work)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                finished.wait(CANCEL_GRACE_S)
            raise

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `work` on the session's loop and return at once: another thread may wait
        for its result, and `interrupt` cancels it."""
        return self._start(work)[0]

    def interrupt(self, grace: float = CANCEL_GRACE_S) -> None:
        """Cancel every work in flight, from whichever thread started it, and give each
        `grace` seconds to clean up (a Ctrl-C in a thread that waits for another)."""
        with self._lock:
            pending = list(self._pending.items())
        for future, _ in pending:
            future.cancel()
        deadline = time.monotonic() + grace
        for _, finished in pending:
            finished.wait(max(0.0, deadline - time.monotonic()))

    def _start(
        self, work: Coroutine[Any, Any, T]
    ) -> tuple[concurrent.futures.Future[T], threading.Event]:
        loop = self._ensure_loop()
        finished = threading.Event()

        async def guarded() -> T:
            try:
                return await work
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(guarded(), loop)
        with self._lock:
            self._pending[future] = finished
        future.add_done_callback(self._forget)
        return future, finished

    def _forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.pop(future, None)

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

        Later calls get the same bindings: a command opens one runtime, the one its first
        step asked for. `offline` opens no provider at all: the bindings hold only the
        project's judge, answering from the judge cache in `state`.

        Raises:
            ProjectError: no provider has the name.
            ArmError, JudgeError: the provider could not open; the message names the
                project file.
        """
        if self._bindings is not None:
            return self._bindings
        stack = AsyncExitStack()
        try:
            if offline:
                judge = await stack.enter_async_context(
                    open_project_judge(loaded, state, offline=True)
                )
                bindings = RuntimeBindings(judge=judge)
            else:
                provider = resolve_runtime(name, state=state)
                bindings = await stack.enter_async_context(
                    provider.open(loaded, operation=operation)
                )
        except (ArmError, JudgeError) as exc:
            await stack.aclose()
            message = str(exc)
            raise type(exc)(f"{loaded.path}: {message}") from None
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
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join()
            self._loop.close()
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
