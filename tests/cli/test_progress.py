"""The progress line: drawn on a terminal, silent elsewhere, never naming a case."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from soev_pipeline.cli.progress import PRELOAD_SWITCH_S, Preloading, TerminalProgress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_counts_on_a_terminal() -> None:
    stream = FakeTerminal()
    progress = TerminalProgress(stream, min_interval=0.0)
    progress.phase("run r1")
    for done in range(1, 5):
        progress.attempts(done, 4, failed=1 if done > 2 else 0)
    progress.graded(4, 4)
    progress.close()
    text = stream.getvalue()
    assert "run r1\n" in text
    assert "attempts [" in text and "4/4" in text and "(1 failed)" in text
    assert "grading" in text and text.endswith("\n")


def test_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress.phase("run r1")
    progress.attempts(1, 2, 0)
    progress.close()
    assert stream.getvalue() == ""


def test_a_run_that_fails_while_the_record_is_still_imported_reports_its_own_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The start-up thread may be inside the record's import when the run fails: the module
    is in sys.modules but has no `close_ahead` yet, and closing must not raise then, nor
    when closing itself fails (the run's error is the one to report)."""
    import types

    from soev_pipeline.cli import commands

    name = "soev_pipeline.orchestration.record"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    commands._close_ahead()  # partially imported: nothing to close

    def broken() -> None:
        raise RuntimeError("the instance is gone")

    closing = types.ModuleType(name)
    closing.close_ahead = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, closing)
    commands._close_ahead()


class _Preload:
    def __init__(self) -> None:
        self.ran = threading.Event()
        self.switch_interval = 0.0

    def __call__(self) -> None:
        self.switch_interval = sys.getswitchinterval()
        self.ran.set()


def test_the_preload_begins_with_the_first_archived_attempt_and_grading_waits_for_it() -> None:
    preload = _Preload()
    progress = Preloading(io.StringIO(), preload)
    progress.started("attempt")  # the first requests go out: nothing begins yet
    assert not preload.ran.wait(0.2)
    progress.attempts(1, 10, 0)
    progress.started("grade")  # waits for it
    assert preload.ran.is_set()
    assert preload.switch_interval == pytest.approx(PRELOAD_SWITCH_S)  # while it ran
    assert sys.getswitchinterval() == pytest.approx(0.005)  # and back after
    progress.attempts(2, 10, 0)  # begun once


def test_grading_begins_the_preload_when_no_attempt_was_archived() -> None:
    """A resumed run with nothing left to attempt goes to grading at once."""
    preload = _Preload()
    progress = Preloading(io.StringIO(), preload)
    progress.started("attempt")
    progress.started("grade")
    assert preload.ran.is_set()
