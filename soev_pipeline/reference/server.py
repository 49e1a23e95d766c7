"""Run the reference assistant as an HTTP server: blocking, or in a background thread.

`serve` is what a command line runs until it is interrupted; `ReferenceServer` is what a
test or a benchmark opens around its work, on a free port, with counters to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TypedDict, Unpack

from soev_pipeline.corpus import CorpusLookup, load_corpus

from .assistant import Assistant
from .protocol import MAX_HEAD, BadRequest, problem, read_request, write_response
from .threads import Counters, ThreadService

CorpusSource = CorpusLookup | Path | str | None


class ServiceOptions(TypedDict, total=False):
    """The keyword arguments of `build_service`, which `serve` and `ReferenceServer` pass on."""

    latency_s: float
    failure_rate: float
    seed: int
    corpus: CorpusSource
    messages: Mapping[str, str] | None
    token: str | None
    envelopes: bool


def build_service(
    *,
    latency_s: float = 0.0,
    failure_rate: float = 0.0,
    seed: int = 0,
    corpus: CorpusSource = None,
    messages: Mapping[str, str] | None = None,
    token: str | None = None,
    envelopes: bool = False,
) -> ThreadService:
    """The thread service over an assistant of `corpus` (the bundled corpus when None).

    Args:
        latency_s, failure_rate, seed, token, envelopes: see `ThreadService`.
        corpus: a corpus lookup or the path of one; the bundled corpus when None.
        messages: the project messages `privacy` and `out_of_scope`; the demo's when None.

    Raises:
        ValueError: a knob is out of range, or a needed message is missing.
        soev_pipeline.core.errors.ProjectError: the corpus file is invalid.
    """
    lookup = load_corpus(Path(corpus)) if isinstance(corpus, str | Path) else corpus
    return ThreadService(
        Assistant(lookup, messages),
        latency_s=latency_s,
        failure_rate=failure_rate,
        seed=seed,
        token=token,
        envelopes=envelopes,
    )


async def _connection(
    service: ThreadService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve the requests of one connection until the client closes it or asks to."""
    try:
        while True:
            try:
                request = await read_request(reader)
            except BadRequest as exc:
                await write_response(
                    writer, problem(400, "bad_request", str(exc)), keep_alive=False
                )
                return
            if request is None:
                return
            try:
                response = await service.handle(request)
            except Exception as exc:
                response = problem(500, "internal_error", type(exc).__name__)
            await write_response(writer, response, keep_alive=request.keep_alive)
            if not request.keep_alive:
                return
    except ConnectionError:
        return
    finally:
        writer.close()


async def _listen(service: ThreadService, host: str, port: int) -> tuple[asyncio.Server, str]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _connection(service, reader, writer)

    server = await asyncio.start_server(handler, host, port, backlog=1024, limit=MAX_HEAD)
    bound = server.sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return server, f"http://{shown}:{bound}/"


def serve(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ready: Callable[[str], None] | None = None,
    **options: Unpack[ServiceOptions],
) -> None:
    """Serve the reference assistant until interrupted (Ctrl-C returns normally).

    Args:
        host: the address to listen on.
        port: the port; 0 picks a free one.
        ready: called with the base URL once the server listens.
        **options: the service's knobs and corpus; see `build_service`.

    Raises:
        ValueError: a knob is out of range, or a needed message is missing.
        soev_pipeline.core.errors.ProjectError: the corpus file is invalid.
    """
    service = build_service(**options)

    async def run() -> None:
        # Ctrl-C through the loop's own handler, which wakes the loop wherever the kernel
        # delivers the signal: one taken by a worker thread would otherwise wait, unseen,
        # until the next request woke the main thread.
        task = asyncio.current_task()
        if task is not None and threading.current_thread() is threading.main_thread():
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, task.cancel)
        server, url = await _listen(service, host, port)
        if ready is not None:
            ready(url)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        asyncio.run(run())


class ReferenceServer:
    """The reference assistant on a free port in a background thread, for tests and benchmarks.

    Use it as a context manager, or call `start()` and `stop()`:

        with ReferenceServer(latency_s=0.05) as server:
            ...  # talk to server.url
        assert server.counters.threads_opened == server.counters.threads_deleted

    The arguments are those of `serve`, without `ready`.
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, **options: Unpack[ServiceOptions]
    ) -> None:
        self.service = build_service(**options)
        self._host = host
        self._port = port
        self._url: str | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. `http://127.0.0.1:54321/`."""
        if self._url is None:
            raise RuntimeError("the server is not running")
        return self._url

    @property
    def counters(self) -> Counters:
        """Requests, threads opened and deleted, turns, and injected failures so far."""
        return self.service.counters

    @property
    def open_threads(self) -> int:
        """Threads opened and not yet deleted."""
        return len(self.service.threads)

    def start(self) -> ReferenceServer:
        """Start listening; returns once the server accepts connections.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: the server is already running.
        """
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, name="reference-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._thread = None
            raise self._error
        return self

    def stop(self) -> None:
        """Stop listening, close open connections and wait for the thread to end."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        thread.join()
        self._thread = None
        self._url = None

    def __enter__(self) -> ReferenceServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start(), which re-raises it
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server, self._url = await _listen(self.service, self._host, self._port)
        self._ready.set()
        async with server:
            await self._stopping.wait()
