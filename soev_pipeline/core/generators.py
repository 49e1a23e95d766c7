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

`tracked` replaces the finalizer hook alone while a coroutine runs: a generator dropped on
the loop's thread is closed by a task scheduled with `call_soon`, one dropped on another
thread as asyncio does. The loop's own first-iteration hook stays, so the loop still knows
every generator, and `loop.shutdown_asyncgens` closes the ones left open as it always
does. What a generator does when closed is unchanged; only how the loop learns of it is.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncGenerator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def tracked(work: Coroutine[Any, Any, T]) -> T:
    """`work`, its half-read async generators closed without waking the loop (see the
    module); to be awaited on the loop that runs it. The hooks the thread had come back
    when it ends."""
    loop = asyncio.get_running_loop()
    thread = threading.get_ident()

    def finalize(generator: AsyncGenerator[Any, Any]) -> None:
        if loop.is_closed():
            return
        on_the_loop = threading.get_ident() == thread
        schedule = loop.call_soon if on_the_loop else loop.call_soon_threadsafe
        schedule(loop.create_task, generator.aclose())

    hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalize)
    try:
        return await work
    finally:
        sys.set_asyncgen_hooks(*hooks)
