"""The progress line: drawn on a terminal, silent elsewhere, never naming a case."""

from __future__ import annotations

import io

from soev_pipeline.cli.progress import TerminalProgress


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
