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

from soev_pipeline.project import LoadedProject, ProjectPaths
from soev_pipeline.run.pool import die_with

from .errors import notice

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
    notice(text)


def reason_of(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def record_now(evaluation: Evaluation, *, rest: bool = False) -> None:
    """Record `evaluation` in this process, at once (`record.record`; with `rest`, the
    second part alone, `record.record_rest`); a failure is the warning of `warn_failed`."""
    try:
        module = importlib.import_module(RECORD_MODULE)
        (module.record_rest if rest else module.record)(evaluation)
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
    """The record in a process forked from this one (see the module): the parent's side.

    The process answers each part: `("graded", error)` once it recorded the first,
    `("finished", error)` at the end. It is stopped (SIGKILL) when the command stops
    without a finished record, and dies with the command (`PR_SET_PDEATHSIG`), as the
    thread that recorded before died with it: what it recorded stays, nothing more is
    recorded behind the command's back.
    """

    forked = True

    def __init__(self, pid: int, outbox: int, inbox: int) -> None:
        self._pid, self._outbox, self._inbox = pid, outbox, inbox
        self._sender: threading.Thread | None = None
        self._send_error: Exception | None = None
        self._ended = False

    @classmethod
    def start(cls, paths: ProjectPaths, loaded: LoadedProject) -> Forked | None:
        """Fork the recording process; None when the fork fails (no memory, no processes
        left), and the record is made on a thread instead. The command's signals are
        blocked across the fork, so that none reaches the new process before it has its
        own handlers (a Ctrl-C there would run the command's)."""
        to_child, from_parent = _pipe()
        to_parent, from_child = _pipe()
        for stream in (sys.stdout, sys.stderr):  # a fork copies what they hold unwritten
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: written by no one
                stream.flush()
        command = os.getpid()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for end in (to_child, from_parent, to_parent, from_child):
                os.close(end)
            return None
        if pid == 0:  # the recording process: it never returns into the command
            status = 1
            try:
                os.close(to_child)
                os.close(from_child)
                _detach(command, mask)
                _serve(paths, loaded, from_parent, to_parent, command)
                status = 0
            finally:
                os._exit(status)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
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
        """Send the rest, wait for the process's answers and warn of its error; with None
        (the run failed), let it close what it recorded of a graded run, or stop it at once
        when nothing was sent. A process that ends before it answers (killed, out of
        memory), or a run that cannot be sent to it, leaves the rest of the record to this
        process, made at once (`record_now`)."""
        answers: dict[str, str | None] = {}
        try:
            if self._sender is None and evaluation is None:
                return  # nothing of the run was sent: nothing to record, nothing to wait for
            if self._sender is not None:
                self._sender.join()
            if self._send_error is None:
                portable = None if evaluation is None else _portable(evaluation)
                _send(self._outbox, ("finish", portable))
                self._answers(answers)
        except Exception:  # as if it had answered no more
            pass
        finally:  # Ctrl-C while it waits, too: the process stops with the command
            self._end(kill="finished" not in answers)
        if evaluation is None:
            return
        if "finished" in answers:
            error = answers["finished"]
        elif "graded" in answers:
            error = answers["graded"]
            if error is None:
                record_now(evaluation, rest=True)
        else:
            error = None
            record_now(evaluation)
        if error is not None:
            warn_failed(evaluation.archive.run_id, error)

    def _answers(self, answers: dict[str, str | None]) -> None:
        """Read the process's answers into `answers` until the last, or its end."""
        while "finished" not in answers:
            message = _receive(self._inbox)
            if message is None:
                return
            kind, error = message
            answers[kind] = error

    def abandon(self) -> None:
        """The run was interrupted: stop the process, recording no more."""
        self._end(kill=True)

    def _end(self, *, kill: bool) -> None:
        """Stop the process (at once with `kill`; else it is ending), reap it, then close the
        pipes, once no thread writes to them: with no reader left, a write fails at once."""
        if self._ended:
            return
        self._ended = True
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        _reap(self._pid)
        if self._sender is not None:
            self._sender.join()
        for end in (self._outbox, self._inbox):
            with contextlib.suppress(OSError):
                os.close(end)


_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _detach(command: int, mask: set[int | signal.Signals]) -> None:
    """Make the new process the record's alone: Ctrl-C is the command's (the terminal sends
    it to both), SIGTERM and SIGHUP end it, it dies with the command, prints nothing on
    the command's standard output, and keeps the command's objects out of its collections
    (which would write to each one they walk, and so copy the pages it shares)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    die_with(command, signal.SIGKILL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    # a report piped on (`run ... | tee`) gets no line of the record's; warnings still
    # go to standard error
    with open(os.devnull, "wb") as nowhere:
        os.dup2(nowhere.fileno(), sys.stdout.fileno())
    gc.freeze()
    with contextlib.suppress(OSError):
        os.nice(NICENESS)


def _serve(
    paths: ProjectPaths, loaded: LoadedProject, inbox: int, outbox: int, command: int
) -> None:
    """The recording process: open the instance ahead, then record the run's parts as they
    come, answering each (see `Forked`)."""
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
        while (message := _receive(inbox, command)) is not None:
            kind, parts = message
            evaluation = None if parts is None else _evaluation(loaded, paths, parts)
            try:
                module = module or importlib.import_module(RECORD_MODULE)
                if kind == "graded":
                    recording = module.Recording(paths)
                    recording.graded(evaluation)
                elif recording is not None:
                    done, recording = recording, None
                    done.finish(None if error is not None else evaluation)
                elif evaluation is not None:
                    module.record(evaluation)
            except Exception as exc:
                error = error or reason_of(exc)
            _send(outbox, ("graded" if kind == "graded" else "finished", error))
            if kind != "graded":
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
    poller = None
    if parent is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
    while left:
        if poller is not None and not poller.poll(_POLL_S * 1000):
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
