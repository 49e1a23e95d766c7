"""Turn an exception into the one-line message and exit status of the CLI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from soev_pipeline.core.chars import printable
from soev_pipeline.core.errors import OutputPathError, SoevError, UnreachableSystemError
from soev_pipeline.core.explain import explain, is_user_error, unwrap

__all__ = ["RunStoppedError", "describe_error", "interrupted", "is_user_error", "notice"]

EXIT_OK = 0
EXIT_ERROR = 1
"""A project or input error: a one-line message naming the file and the place."""
EXIT_USAGE = 2
EXIT_GATE = 3
"""The quality gate failed: `compare --fail-on-regression`, `report --fail-under`."""
EXIT_INCONCLUSIVE = 4
"""The gate could not decide: too many attempts did not run, or those that did not run could
hide a regression (docs/runs.md#exit-statuses)."""
EXIT_INTERRUPTED = 130


_INTERRUPTIONS = frozenset(
    {"KeyboardInterrupt", "DagsterExecutionInterruptedError", "CancelledError"}
)


class RunStoppedError(SoevError):
    """A file of the run could not be written or read (a full disk): the run stopped, what
    it archived is kept, and the message says how to resume it."""


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is Ctrl-C, as it reaches us directly or through Dagster or asyncio
    (also inside an exception group)."""
    return type(unwrap(exc)).__name__ in _INTERRUPTIONS


def describe_error(exc: BaseException, args: argparse.Namespace) -> tuple[str, int]:
    """The message (one line, without sealed content) and exit status for `exc`.

    A run whose first attempts could not reach the assistant properly (a wrong route or
    key) exits 2, as a wrong command line does: the command, not the assistant, is wrong;
    so does an output path that may not be written.
    """
    usage = isinstance(unwrap(exc), UnreachableSystemError | OutputPathError)
    status = EXIT_USAGE if usage else EXIT_ERROR
    return explain(exc, getattr(args, "project", Path("project.yaml"))), status


def notice(text: str) -> None:
    """One line for the user on standard error, `soev-evals: ` first; control characters in
    it (from a file name or a server's answer) are shown escaped."""
    print(f"soev-evals: {printable(text, keep='')}", file=sys.stderr)
