"""SIGTERM and SIGHUP end a command the way Ctrl-C does.

CI runners and Kubernetes stop a job with SIGTERM, a closed terminal sends SIGHUP. Either
is turned into SIGINT, which every part of a command already handles: the running
evaluation is cancelled (finished attempts stay archived, the ones in flight are given
up), forked grading workers stop with it, and the command prints one line with the resume
hint. The exit status tells the signals apart: 128 + its number (130 for Ctrl-C, 143 for
SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import signal
from types import FrameType

_received: list[int] = []


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    signal.raise_signal(signal.SIGINT)


def forward_to_interrupt() -> None:
    """Turn SIGTERM and SIGHUP into SIGINT for the rest of the command (main thread only)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _as_interrupt)


def interruption_status() -> int:
    """The exit status of a command that a signal ended."""
    return 128 + (_received[0] if _received else signal.SIGINT)


def interruption_name() -> str:
    """How the command was ended, for its last line."""
    if not _received:
        return "interrupted"
    return f"stopped by {signal.Signals(_received[0]).name}"
