"""`api.run_sync`: the one way every front end runs its async work, and how an interruption
of the waiting thread reaches the work."""

from __future__ import annotations

import asyncio
import os
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
    started, cleaned = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    def interrupt_when_started() -> None:
        started.wait()
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_sync(forever())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert cleaned.is_set()
