"""`api.run_sync`: the one way every front end runs its async work, and how an interruption
of the waiting thread reaches the work."""

from __future__ import annotations

import asyncio
import gc
import signal
import threading

import pytest

from soev_pipeline.api import run_sync


def test_it_returns_the_result_and_raises_the_error_of_the_work() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fails() -> None:
        raise LookupError("no such run")

    assert run_sync(answer()) == 42
    with pytest.raises(LookupError, match="no such run"):
        run_sync(fails())


def test_it_works_where_a_loop_runs_already() -> None:
    async def inner() -> str:
        return threading.current_thread().name

    async def notebook_cell() -> str:
        return run_sync(inner())

    assert asyncio.run(notebook_cell()) == "soev-run"


def test_an_interrupted_wait_cancels_the_work_and_lets_it_clean_up() -> None:
    """Ctrl-C (or a terminated Dagster run) lands in the waiting thread: the work is
    cancelled, its cleanup runs before the interruption goes on."""
    started, cleaned, interrupted = threading.Event(), threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    main = threading.main_thread().ident
    assert main is not None

    def interrupt_when_started() -> None:
        started.wait()
        # To the main thread, which waits: a signal to the process may land in another of
        # the test process's threads and leave the main one asleep. And a handler that
        # happens to run inside a finalizer of the collector is reported there and lost,
        # as a person's Ctrl-C can be: so it is sent again until the work was cancelled.
        for _ in range(5):
            if interrupted.is_set():
                return
            signal.pthread_kill(main, signal.SIGINT)
            if cleaned.wait(5.0):
                return

    gc.collect()  # fewer finalizers left to run while the signal arrives
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_sync(forever())
    finally:
        interrupted.set()
        signal.signal(signal.SIGINT, previous)
    assert cleaned.is_set()
