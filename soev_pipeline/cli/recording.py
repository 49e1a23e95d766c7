"""`run`'s record in Dagster: made by a process of its own where it can be, on a thread
of this one where it cannot.

Recording a run imports Dagster and opens the project's instance: about a second of CPU.
On a thread, while the attempts run, that import holds the interpreter's lock the event
loop needs to send them (`bench/throughput.py`'s 50 ms run: an attempt phase 0.8 s longer);
after the last attempt, it would be a second of tail. So `start_recording` forks a process
for it before the run starts any thread (`Forked`): the process imports Dagster and opens
the instance on the machine's other core, at a lower priority than the run; it then gets
the run through a pipe once it is graded and once it is aggregated, records each part as
`record.Recording` does, and answers with the one error to warn of, if any.

Where forking is not safe or not worth it, the record is made on a thread as before
(`Threaded`): off Linux, when this process already runs other threads (a fork copies only
the calling one, and a lock another held stays taken in the copy), and for a runs folder in
object storage, whose clients a fork must not share. Either way a failure of the record is
a warning after a finished run: the run is archived whole, and `soev-evals rescore`
records it again.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import pickle
import select
import signal
import struct
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from soev_pipeline.core.chars import printable
from soev_pipeline.project import LoadedProject, ProjectPaths

if TYPE_CHECKING:
    from soev_pipeline.api import Evaluation
    from soev_pipeline.orchestration.record import Recording

RECORD_MODULE = "soev_pipeline.orchestration.record"
HTML_MODULE = "soev_pipeline.view.html_report"
IN_PROCESS_ENV = "SOEV_RECORD_IN_PROCESS"
"""Set (to anything but empty) to record on a thread of the command's own process."""
NICENESS = 10
"""How much lower than the run the recording process asks to be scheduled."""
_HEADER = struct.Struct("!Q")
_POLL_S = 1.0
"""How often a recording process waiting for its run checks that the run still exists."""


class Recorder(Protocol):
    """What `run` calls of its record: the first part once graded, the rest at the end."""

    forked: bool
    """Whether a process of its own opens the instance (the start-up thread need not)."""

    def graded(self, evaluation: Evaluation) -> None: ...

    def finish(self, evaluation: Evaluation | None) -> None: ...

    def abandon(self) -> None: ...


def start_recording(paths: ProjectPaths, loaded: LoadedProject) -> Recorder:
    """The record of a run of `loaded`: forked now when it can be (see the module)."""
    if (
        os.environ.get(IN_PROCESS_ENV)
        or not sys.platform.startswith("linux")
        or not isinstance(paths.runs, Path)
        or threading.active_count() != 1
    ):
        return Threaded(paths)
    return Forked.start(paths, loaded) or Threaded(paths)


def warn_failed(run_id: str, reason: str) -> None:
    """The one warning of a record that failed after a finished run."""
    reason = " ".join(reason.split())[:300]
    text = (
        f"warning: the run is archived, but recording it in Dagster failed ({reason}); "
        f"`soev-evals rescore {run_id}` records it again"
    )
    print(f"soev-evals: {printable(text, keep='')}", file=sys.stderr)


def reason_of(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def record_now(evaluation: Evaluation) -> None:
    """Record `evaluation` in this process, at once (`record.record`); a failure is the
    warning of `warn_failed`."""
    try:
        importlib.import_module(RECORD_MODULE).record(evaluation)
    except Exception as exc:
        warn_failed(evaluation.archive.run_id, reason_of(exc))


class Threaded:
    """The record on a thread of this process: its first part while the run is aggregated
    and its pages are written, where it mostly waits on the disk."""

    forked = False

    def __init__(self, paths: ProjectPaths) -> None:
        self._paths = paths
        self._recording: Recording | None = None
        self._thread: threading.Thread | None = None
        self._error: Exception | None = None

    def graded(self, evaluation: Evaluation) -> None:
        """Start the first part (`api.execute` calls this on its event loop's thread)."""
        self._thread = threading.Thread(
            target=self._record_graded, args=(evaluation,), name="soev-record", daemon=True
        )
        self._thread.start()

    def _record_graded(self, evaluation: Evaluation) -> None:
        try:
            self._recording = importlib.import_module(RECORD_MODULE).Recording(self._paths)
            self._recording.graded(evaluation)
        except Exception as exc:
            self._error = exc

    def finish(self, evaluation: Evaluation | None) -> None:
        """Wait for the first part and record the rest; with None (the run failed), only
        wait and close."""
        if self._thread is not None:
            self._thread.join()
        recording, error = self._recording, self._error
        if recording is None and error is None:
            if evaluation is not None:
                record_now(evaluation)
            return
        try:
            if recording is not None:
                recording.finish(None if error is not None else evaluation)
        except Exception as exc:
            error = error or exc
        if error is not None and evaluation is not None:
            warn_failed(evaluation.archive.run_id, reason_of(error))

    def abandon(self) -> None:
        """The run was interrupted: nothing more is recorded (what is written stays)."""


class Forked:
    """The record in a process forked from this one (see the module): the parent's side."""

    forked = True

    def __init__(self, pid: int, outbox: int, inbox: int) -> None:
        self._pid, self._outbox, self._inbox = pid, outbox, inbox
        self._sender: threading.Thread | None = None
        self._send_error: Exception | None = None
        self._closed = False

    @classmethod
    def start(cls, paths: ProjectPaths, loaded: LoadedProject) -> Forked | None:
        """Fork the recording process; None when the fork fails (no memory, no processes
        left), and the record is made on a thread instead."""
        to_child, from_parent = _pipe()
        to_parent, from_child = _pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError:
            for end in (to_child, from_parent, to_parent, from_child):
                os.close(end)
            return None
        if pid == 0:  # the recording process: it never returns into the command
            status = 1
            try:
                os.close(to_child)
                os.close(from_child)
                _serve(paths, loaded, from_parent, to_parent)
                status = 0
            finally:
                os._exit(status)
        os.close(from_parent)
        os.close(to_parent)
        return cls(pid, to_child, from_child)

    def graded(self, evaluation: Evaluation) -> None:
        """Send the graded run on a thread of its own (the process may still be importing
        Dagster, and the pipe holds less than the message): the event loop goes on."""
        message = ("graded", _portable(evaluation))
        self._sender = threading.Thread(
            target=self._send_quietly, args=(message,), name="soev-record", daemon=True
        )
        self._sender.start()

    def _send_quietly(self, message: object) -> None:
        try:
            _send(self._outbox, message)
        except Exception as exc:  # the process is gone, or the run would not pickle
            self._send_error = exc

    def finish(self, evaluation: Evaluation | None) -> None:
        """Send the rest, wait for the process's answer and warn of its error; with None
        (the run failed), tell it to close its instance, and wait for it. A process that
        ends before it answers (killed, out of memory), or a run that cannot be sent to
        it, leaves the record to this process, made at once (`record_now`)."""
        if self._sender is not None:
            self._sender.join()
        answer = None
        try:
            if self._send_error is None:
                portable = None if evaluation is None else _portable(evaluation)
                _send(self._outbox, ("finish", portable))
                answer = _receive(self._inbox)
        except Exception:  # as if it had not answered
            answer = None
        finally:
            self.abandon()
            _reap(self._pid)
        if evaluation is None:
            return
        if answer is None:
            record_now(evaluation)
        elif answer[0] is not None:
            warn_failed(evaluation.archive.run_id, answer[0])

    def abandon(self) -> None:
        """Close the pipes: the process sees the end of its input, closes what it opened
        and ends without recording more."""
        if self._closed:
            return
        self._closed = True
        for end in (self._outbox, self._inbox):
            with contextlib.suppress(OSError):
                os.close(end)


def _serve(paths: ProjectPaths, loaded: LoadedProject, inbox: int, outbox: int) -> None:
    """The recording process: open the instance ahead, then record the run's parts as they
    come; answer once, after `finish`, with the first error or None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
    # what the command prints is its own: a report piped on (`run ... | tee`) gets no line
    # of the record's; warnings still go to standard error
    with open(os.devnull, "wb") as nowhere:
        os.dup2(nowhere.fileno(), sys.stdout.fileno())
    # the command's objects stay out of this process's collections, which would write to
    # each one they walk and so copy the pages it shares with the command
    gc.freeze()
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    parent = os.getppid()
    module = None
    try:
        module = importlib.import_module(RECORD_MODULE)
        importlib.import_module(HTML_MODULE)  # the report's metadata names its HTML page
        module.open_ahead(paths, loaded)
    except Exception:  # made again by the record, and reported there
        pass
    recording = None
    error: str | None = None
    try:
        while (message := _receive(inbox, parent)) is not None:
            kind, parts = message
            evaluation = None if parts is None else _evaluation(loaded, paths, parts)
            try:
                module = module or importlib.import_module(RECORD_MODULE)
                if kind == "graded":
                    recording = module.Recording(paths)
                    recording.graded(evaluation)
                    continue
                if recording is not None:
                    done, recording = recording, None
                    done.finish(None if error is not None else evaluation)
                elif evaluation is not None:
                    module.record(evaluation)
            except Exception as exc:
                error = error or reason_of(exc)
                if kind == "graded":
                    continue
            _send(outbox, (error,))
            return
    finally:  # the run stopped, or its process is gone: close what was opened
        with contextlib.suppress(Exception):
            if recording is not None:
                recording.finish(None)
        with contextlib.suppress(Exception):
            if module is not None:
                module.close_ahead()


Parts = tuple[str, tuple[str, ...], object, object, object]


def _portable(evaluation: Evaluation) -> Parts:
    """What the recording process needs of `evaluation` beyond the project it has: the run,
    its steps, and the attempt step's and grade step's results without the cases, plans
    and folds the record never reads (a fifth of the bytes)."""
    attempted = evaluation.attempted
    if attempted is not None:
        attempted = replace(attempted, prepared=replace(attempted.prepared, cases=[], plan=[]))
    scoring = evaluation.scoring
    if scoring is not None:
        scoring = replace(scoring, fold=None, ledger=None, previous=None)
    return (evaluation.archive.run_id, evaluation.steps, attempted, scoring, evaluation.report)


def _evaluation(loaded: LoadedProject, paths: ProjectPaths, parts: Parts) -> Evaluation:
    from soev_pipeline.api import Evaluation
    from soev_pipeline.run.archive import RunArchive

    run_id, steps, attempted, scoring, report = parts
    return Evaluation(
        loaded,
        paths,
        RunArchive(paths.runs, run_id),
        steps,  # type: ignore[arg-type]
        attempted,  # type: ignore[arg-type]
        scoring,  # type: ignore[arg-type]
        report,  # type: ignore[arg-type]
    )


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()
    return write, read


def _send(fd: int, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _receive(fd: int, parent: int | None = None) -> Any:
    """The next message on `fd`; None at its end, or (given the `parent` pid) once that
    process is gone (a grading worker it forked may hold the pipe open)."""
    header = _read(fd, _HEADER.size, parent)
    if header is None:
        return None
    data = _read(fd, _HEADER.unpack(header)[0], parent)
    return None if data is None else pickle.loads(data)


def _read(fd: int, size: int, parent: int | None) -> bytes | None:
    chunks, left = [], size
    while left:
        if parent is not None:
            ready, _, _ = select.select([fd], [], [], _POLL_S)
            if not ready:
                if os.getppid() != parent:
                    return None
                continue
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
