"""Worker processes for grading: the standard library's `ProcessPoolExecutor`, forked.

The workers are forked (Linux), so they start with this process's memory: the loaded
project, the corpus and its indexes, the language model. Nothing of that is pickled; only
the tasks (chunks of evidence as JSON text) and their results cross the pipes. Each worker
runs its tasks on an event loop of its own.

Workers ignore SIGINT (the terminal sends Ctrl-C to the whole process group; this process
ends them itself) and get SIGTERM when this process dies, so none outlives a killed
command. A worker that dies (killed, out of memory) or fails ends the grading with one
`GradingWorkerError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from soev_pipeline.core.errors import ProjectError, SoevError

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

T = TypeVar("T")
R = TypeVar("R")
Work = Callable[[T], Coroutine[Any, Any, R]]

WORKERS_ENV = "SOEV_GRADE_WORKERS"
MAX_AUTO_WORKERS = 8
"""Past this many workers, reading the evidence and writing the verdicts here is the limit."""
MAX_WORKERS = 64
"""The most workers `SOEV_GRADE_WORKERS` may ask for: each is a copy of this process."""
_PR_SET_PDEATHSIG = 1


class GradingWorkerError(SoevError):
    """A grading worker process died or failed: the grading stops, its scoring is dropped."""


def workers_setting(value: str | None = None) -> int | None:
    """The number of workers that `SOEV_GRADE_WORKERS` asks for, or None for automatic.

    Unset, empty or `auto` is automatic; `1` grades in this process alone; `N` > 1 uses a
    pool of N workers whatever the size of the work, at most `MAX_WORKERS`.

    Raises:
        ProjectError: the value is not `auto` or a whole number from 1 to `MAX_WORKERS`.
    """
    if value is None:
        value = os.environ.get(WORKERS_ENV)
    if value is None or value.strip().lower() in ("", "auto"):
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKERS:
        raise ProjectError(
            f"{WORKERS_ENV}={value[:40]!r}: give the number of grading processes "
            f"(1 to {MAX_WORKERS}) or 'auto'"
        )
    return count


def auto_workers() -> int:
    """The workers of automatic mode: one per core this process may run on, at most
    `MAX_AUTO_WORKERS`; 1, none, off Linux, where forking this process is not safe."""
    if not sys.platform.startswith("linux"):
        return 1
    return min(len(os.sched_getaffinity(0)), MAX_AUTO_WORKERS)


_work: Work[Any, Any] | None = None
_loop: asyncio.AbstractEventLoop | None = None


def die_with(parent: int, signum: int) -> None:
    """In a process forked from `parent` (Linux): have the kernel send it `signum` when the
    parent ends (`PR_SET_PDEATHSIG`), and end at once if the parent already has."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signum)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _start_worker(work: Work[Any, Any], parent: int) -> None:
    """In a new worker: ignore Ctrl-C, die with the parent, and keep an event loop."""
    global _work, _loop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    die_with(parent, signal.SIGTERM)
    # The parent's objects stay out of this process's garbage collection: a collection
    # writes to every object it visits, which would copy the shared pages.
    gc.freeze()
    # Forked from inside the parent's running loop: asyncio ties a running loop to the
    # process that runs it, so none runs here and this process can run one of its own.
    _work, _loop = work, asyncio.new_event_loop()


def _run_task(task: Any) -> Any:
    assert _work is not None and _loop is not None
    return _loop.run_until_complete(_work(task))


class _ForkContext:
    """`multiprocessing`'s fork context, which keeps the processes it starts.

    The executor names its workers nowhere public; a pool closed in the middle of a task
    must kill them.
    """

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("fork")
        self.processes: list[BaseProcess] = []

    def Process(self, *args: Any, **kwargs: Any) -> BaseProcess:
        process = self._context.Process(*args, **kwargs)
        self.processes.append(process)
        return process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class WorkerPool(Generic[T, R]):
    """`workers` processes forked from this one, each running `work` on the tasks it gets.

    Create it and call `submit` on the event loop; results come back as futures of that
    loop, in whatever order the workers finish: await them in the order that matters.
    """

    def __init__(self, work: Work[T, R], workers: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._context = _ForkContext()
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=cast("BaseContext", self._context),
            initializer=_start_worker,
            initargs=(work, os.getpid()),
        )
        self._started = False
        self._running: set[Future[R]] = set()
        """The tasks sent and not finished: a close while some run stops the workers."""
        self._broken = False
        """A worker died: a close kills the others, also one the executor did not stop."""

    def submit(self, task: T) -> asyncio.Future[R]:
        """Queue `task` for the next free worker; the future holds its result."""
        future = self._loop.create_future()
        try:
            submitted = self._send(task)
        except BrokenProcessPool as exc:  # a worker died since the last task was sent
            self._broken = True
            future.set_exception(_failure(exc))
            return future
        self._running.add(submitted)
        submitted.add_done_callback(self._running.discard)
        submitted.add_done_callback(self._note_broken)
        submitted.add_done_callback(
            lambda done: self._loop.call_soon_threadsafe(_settle, future, done)
        )
        return future

    def _send(self, task: T) -> Future[R]:
        if self._started:
            return self._executor.submit(_run_task, task)
        # the workers are forked by the first submit: with Ctrl-C blocked, so that none dies
        # of one before it ignores it
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            submitted = self._executor.submit(_run_task, task)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self._started = True
        return submitted

    def _note_broken(self, done: Future[R]) -> None:
        if not done.cancelled() and isinstance(done.exception(), BrokenProcessPool):
            self._broken = True

    def close(self) -> None:
        """End the workers; at once when a task is still running (after an error, Ctrl-C)
        or a worker died.

        Stopping them at once kills every worker: one killed while it holds the pool's queue
        would leave the others waiting for it forever. After a worker died, the executor
        stops the others itself, but not one it was starting at that moment: that one would
        be waited for while it grades its chunk. Only the executor's own thread waits for
        the workers it knows, and this one only after it for the rest: two threads waiting
        for one process leave one of them without its exit status, and the process listed
        as running.
        """
        if not self._broken and not any(not task.done() for task in self._running):
            self._executor.shutdown(wait=True)
            return
        processes = [process for process in self._context.processes if process.pid is not None]
        for process in processes:
            with contextlib.suppress(ProcessLookupError):  # not waited for yet: not reused
                os.kill(cast("int", process.pid), signal.SIGKILL)
        self._executor.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join()


def _settle(future: asyncio.Future[R], done: Future[R]) -> None:
    if future.done():
        return
    if done.cancelled():
        future.cancel()
        return
    error = done.exception()
    if error is None:
        future.set_result(done.result())
    else:
        future.set_exception(_failure(error))


def _failure(error: BaseException) -> GradingWorkerError:
    """The error that ends the grading for what the pool raised."""
    if isinstance(error, BrokenProcessPool):
        return GradingWorkerError(
            "a grading worker process ended unexpectedly (killed, or out of memory?); "
            f"grade again, or set {WORKERS_ENV}=1 to grade in one process"
        )
    failure = GradingWorkerError(
        f"a grading worker failed: {type(error).__name__}: {' '.join(str(error).split())}"
    )
    if error.__cause__ is not None:  # the worker's traceback, as the pool attaches it
        failure.add_note(str(error.__cause__))
    return failure
