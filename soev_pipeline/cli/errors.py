"""Turn an exception into the one-line message and exit status of the CLI."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml
from pydantic import ValidationError

from soev_pipeline.core.errors import SealChangedError, SoevError, validation_problem, where

EXIT_OK = 0
EXIT_ERROR = 1
"""A project or input error: a one-line message naming the file and the place."""
EXIT_USAGE = 2
EXIT_GATE = 3
"""The quality gate failed: `compare --fail-on-regression`, `report --fail-under`."""
EXIT_INCONCLUSIVE = 4
"""The gate could not decide: too many attempts did not run (SPEC.md section 10)."""
EXIT_INTERRUPTED = 130


_INTERRUPTIONS = frozenset(
    {"KeyboardInterrupt", "DagsterExecutionInterruptedError", "CancelledError"}
)


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is Ctrl-C, as it reaches us directly or through Dagster or asyncio."""
    return type(exc).__name__ in _INTERRUPTIONS


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` is about the user's files or systems, not a bug of ours."""
    return isinstance(exc, SoevError | ValidationError | yaml.YAMLError | OSError | ImportError)


def _yaml(exc: yaml.YAMLError, path: Path) -> str:
    mark = getattr(exc, "problem_mark", None)
    line, column = (None, None) if mark is None else (mark.line + 1, mark.column + 1)
    place = where(getattr(mark, "name", None) or path, line=line, column=column)
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{place}: {problem}"


def describe_error(exc: BaseException, args: argparse.Namespace) -> tuple[str, int]:
    """The message (one line, without sealed content) and exit status for `exc`."""
    project = getattr(args, "project", Path("project.yaml"))
    if isinstance(exc, SealChangedError):
        return exc.aggregate_message, EXIT_ERROR
    if isinstance(exc, SoevError):
        return _one_line(str(exc)), EXIT_ERROR
    if isinstance(exc, ValidationError):
        return f"{where(project)}: {validation_problem(exc)}", EXIT_ERROR
    if isinstance(exc, yaml.YAMLError):
        return _yaml(exc, project), EXIT_ERROR
    if isinstance(exc, OSError):
        reason = exc.strerror or _one_line(str(exc)) or type(exc).__name__
        return (f"{exc.filename}: {reason}" if exc.filename else reason), EXIT_ERROR
    if isinstance(exc, ImportError):
        # The hooks module's own failures are ProjectErrors that name it (project.hooks);
        # this is a module that the package or a runtime provider needs.
        what = f"module {exc.name!r}" if exc.name else "a module"
        return f"cannot import {what}: {_one_line(str(exc))}", EXIT_ERROR
    return f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", EXIT_ERROR


def _one_line(text: str) -> str:
    return " ".join(text.split())
