"""Worker processes for grading, forked from this one so that they share what it loaded.

A worker is forked (Linux), so it starts with this process's memory: the loaded project,
the corpus and its indexes, the language model. Nothing of that is pickled; only the tasks
and their results cross the pipes. Each worker runs one task at a time; a thread here feeds
it from a shared queue, so a worker that is slowed down takes fewer tasks.

A worker that dies (killed, out of memory) fails the task it held and every task after it
with `GradingWorkerError`; `close` ends the workers, also in the middle of a task (Ctrl-C).
Workers ignore SIGINT: the terminal sends Ctrl-C to the whole process group, and this
process ends them itself.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Coroutine
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from soev_pipeline.core.errors import ProjectError, SoevError

T = TypeVar("T")
R = TypeVar("R")
Work = Callable[[T], Coroutine[Any, Any, R]]

WORKERS_ENV = "SOEV_GRADE_WORKERS"
MAX_AUTO_WORKERS = 8
"""Past this many workers, reading the evidence and writing the verdicts here is the limit."""
_STOP_S = 5.0


class GradingWorkerError(SoevError):
    """A grading worker process died or failed: the grading stops, its scoring is dropped."""


def workers_setting(value: str | None = None) -> int | None:
    """The number of workers that `SOEV_GRADE_WORKERS` asks for, or None for automatic.

    Unset, empty or `auto` is automatic; `1` grades in this process alone; `N` > 1 uses a
    pool of N workers whatever the size of the work.

    Raises:
        ProjectError: the value is not `auto` or a whole number of at least 1.
    """
    if value is None:
        value = os.environ.get(WORKERS_ENV)
    if value is None or value.strip().lower() in ("", "auto"):
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ProjectError(
            f"{WORKERS_ENV}={value!r}: give the number of grading processes (1 or more) or 'auto'"
        )
    return count


def auto_workers() -> int:
    """The workers of automatic mode: one per core this process may run on, at most
    `MAX_AUTO_WORKERS`; 1, none, off Linux, where forking this process is not safe."""
    if not sys.platform.startswith("linux"):
        return 1
    return min(len(os.sched_getaffinity(0)), MAX_AUTO_WORKERS)


def _serve(connection: Connection, work: Work[Any, Any], theirs: list[Connection]) -> None:
    """A worker's life: run each task that arrives until the pipe closes.

    `theirs` are the parent's ends of the pipes, this one's and the earlier workers', which
    the fork copied: closed here, so that each pipe ends when the parent closes it.
    """
    for end in theirs:
        end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # The parent's objects stay out of this process's garbage collection: a collection
    # writes to every object it visits, which would copy the shared pages.
    gc.freeze()
    asyncio.events._set_running_loop(None)  # forked from inside the parent's running loop
    loop = asyncio.new_event_loop()
    try:
        while True:
            task = connection.recv()
            try:
                answer: tuple[str, Any] = ("ok", loop.run_until_complete(work(task)))
            except Exception as exc:
                answer = ("error", _described(exc))
            try:
                connection.send(answer)
            except OSError:
                raise
            except Exception as exc:  # the result does not pickle
                connection.send(("error", _described(exc)))
    except (EOFError, OSError):
        return  # the parent closed the pipe, or is gone
    finally:
        loop.close()


def _described(exc: Exception) -> str:
    """The exception on its first line, then its traceback."""
    return f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"


class WorkerPool(Generic[T, R]):
    """`workers` processes forked from this one, each running `work` on the tasks it gets.

    Create it and call `submit` on the event loop; results come back as futures of that
    loop, in whatever order the workers finish: await them in the order that matters.
    """

    def __init__(self, work: Work[T, R], workers: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._tasks: queue.SimpleQueue[tuple[T, asyncio.Future[R]] | None] = queue.SimpleQueue()
        self._closing = False
        self._broken: GradingWorkerError | None = None
        self._outstanding: set[asyncio.Future[R]] = set()
        context = multiprocessing.get_context("fork")
        self._processes: list[BaseProcess] = []
        self._threads: list[threading.Thread] = []
        connections: list[Connection] = []
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for number in range(workers):
                here, there = context.Pipe()
                connections.append(here)
                process = context.Process(
                    target=_serve,
                    args=(there, work, connections),
                    name=f"soev-grade-{number}",
                    daemon=True,
                )
                process.start()
                there.close()
                self._processes.append(process)
        except BaseException:
            self._stop(now=True)
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for worker, connection in zip(self._processes, connections, strict=True):
            thread = threading.Thread(
                target=self._feed, args=(worker, connection), name=f"{worker.name}-feed"
            )
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def submit(self, task: T) -> asyncio.Future[R]:
        """Queue `task` for the next free worker; the future holds its result."""
        future: asyncio.Future[R] = self._loop.create_future()
        self._outstanding.add(future)
        future.add_done_callback(self._outstanding.discard)
        if self._broken is not None:
            future.set_exception(self._broken)
        else:
            self._tasks.put((task, future))
        return future

    def _feed(self, process: BaseProcess, connection: Connection) -> None:
        """A thread per worker: send it a task, wait for the answer, settle the future."""
        with connection:
            while (item := self._tasks.get()) is not None:
                task, future = item
                try:
                    connection.send(task)
                    status, value = connection.recv()
                except (EOFError, OSError):
                    if not self._closing:
                        self._fail(future, self._died(process))
                    return
                except Exception as exc:  # a task or a result that does not pickle
                    why = f"{type(exc).__name__}: {exc}"
                    self._fail(future, GradingWorkerError(f"a grading worker failed: {why}"))
                    return
                if status == "ok":
                    self._loop.call_soon_threadsafe(_settle, future, value, None)
                else:
                    first = str(value).splitlines()[0]
                    error = GradingWorkerError(f"a grading worker failed: {first}")
                    error.add_note(str(value))
                    self._fail(future, error)
                    return

    def _died(self, process: BaseProcess) -> GradingWorkerError:
        process.join(_STOP_S)
        code = process.exitcode
        if code is not None and code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exit status {code}"
        return GradingWorkerError(
            f"grading worker process {process.pid} ended unexpectedly ({how}; out of memory?); "
            f"grade again, or set {WORKERS_ENV}=1 to grade in one process"
        )

    def _fail(self, future: asyncio.Future[R], error: GradingWorkerError) -> None:
        """Fail `future` and every task still queued; later submits fail at once."""
        self._broken = self._broken or error
        self._loop.call_soon_threadsafe(_settle, future, None, error)
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._tasks.put(None)  # another feeder's stop: leave it for that one
                break
            self._loop.call_soon_threadsafe(_settle, item[1], None, error)

    def close(self) -> None:
        """End the workers; at once when a task is still running (after an error, Ctrl-C)."""
        self._closing = True
        if self._outstanding:
            self._stop(now=True)
        for _ in self._threads:
            self._tasks.put(None)
        for thread in self._threads:
            thread.join(_STOP_S)
        self._stop(now=False)

    def _stop(self, *, now: bool) -> None:
        """Wait for the workers to end (SIGTERM first when `now`); SIGKILL the ones that hang."""
        if now:
            for process in self._processes:
                if process.is_alive():
                    process.terminate()
        for process in self._processes:
            process.join(_STOP_S)
            if process.is_alive():
                process.kill()
                process.join(_STOP_S)


def _settle(future: asyncio.Future[R], value: R | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)  # type: ignore[arg-type]
