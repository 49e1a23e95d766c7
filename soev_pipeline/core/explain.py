"""The one line that tells a person what went wrong, for every front end.

The CLI prints it after `soev-evals: error:`; a Dagster step fails with it as the failure's
description. It names the file and the place, and never a sealed test case.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from .errors import SealChangedError, SoevError, validation_problem, where
from .secrets import redact

_CANCELLED = frozenset({"CancelledError", "KeyboardInterrupt"})


def unwrap(exc: BaseException) -> BaseException:
    """The error inside an exception group (asyncio's `TaskGroup` raises one): the first
    that is the user's to act on, else the first that is not a cancellation, else the
    first. Anything else is returned as it is."""
    leaves: list[BaseException] = []
    stack = [exc]
    while stack:
        current = stack.pop()
        if isinstance(current, BaseExceptionGroup) and current.exceptions:
            stack.extend(reversed(current.exceptions))
        else:
            leaves.append(current)
    for wanted in (
        is_user_error,
        lambda leaf: type(leaf).__name__ not in _CANCELLED,
        lambda leaf: True,
    ):
        for leaf in leaves:
            if wanted(leaf):
                return leaf
    return exc


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` is about the user's files or systems, not a bug of ours."""
    exc = unwrap(exc) if isinstance(exc, BaseExceptionGroup) else exc
    return isinstance(exc, SoevError | ValidationError | yaml.YAMLError | OSError | ImportError)


def explain(exc: BaseException, project_file: Path | str = "project.yaml") -> str:
    """The one-line message of `exc`, redacted; `project_file` is where a validation or YAML
    error without a place of its own happened."""
    return redact(_explain(exc, Path(project_file)))


def _explain(exc: BaseException, project_file: Path) -> str:
    exc = unwrap(exc)
    if isinstance(exc, SealChangedError):
        return exc.aggregate_message
    if isinstance(exc, SoevError):
        return one_line(str(exc))
    if isinstance(exc, ValidationError):
        return f"{where(project_file)}: {validation_problem(exc)}"
    if isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        line, column = (None, None) if mark is None else (mark.line + 1, mark.column + 1)
        place = where(getattr(mark, "name", None) or project_file, line=line, column=column)
        return f"{place}: {getattr(exc, 'problem', None) or 'invalid YAML'}"
    if isinstance(exc, OSError):
        reason = exc.strerror or one_line(str(exc)) or type(exc).__name__
        return f"{exc.filename}: {reason}" if exc.filename else reason
    if isinstance(exc, ImportError):
        # The hooks module's own failures are ProjectErrors that name it (project.hooks);
        # this is a module that the package or a runtime provider needs.
        what = f"module {exc.name!r}" if exc.name else "a module"
        return f"cannot import {what}: {one_line(str(exc))}"
    return f"internal error: {type(exc).__name__}: {one_line(str(exc))}"


def one_line(text: str) -> str:
    return " ".join(text.split())
