"""Turn an exception into the one-line message and exit status of the CLI."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml
from pydantic import ValidationError

from soev_pipeline.core.errors import SealChangedError, SoevError

EXIT_ERROR = 1


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` is about the user's files or systems, not a bug of ours."""
    return isinstance(exc, SoevError | ValidationError | yaml.YAMLError | OSError | ImportError)


def _validation(exc: ValidationError, path: Path) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
    more = exc.error_count() - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {field}: {message}{suffix}"


def _yaml(exc: yaml.YAMLError, path: Path) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"{getattr(mark, 'name', None) or path}"
    if mark is not None:
        where += f": line {mark.line + 1}, column {mark.column + 1}"
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{where}: {problem}"


def describe_error(exc: BaseException, args: argparse.Namespace) -> tuple[str, int]:
    """The message (one line, without sealed content) and exit status for `exc`."""
    project = getattr(args, "project", Path("project.yaml"))
    if isinstance(exc, SealChangedError):
        return exc.aggregate_message, EXIT_ERROR
    if isinstance(exc, SoevError):
        return _one_line(str(exc)), EXIT_ERROR
    if isinstance(exc, ValidationError):
        return _validation(exc, project), EXIT_ERROR
    if isinstance(exc, yaml.YAMLError):
        return _yaml(exc, project), EXIT_ERROR
    if isinstance(exc, OSError):
        return f"{exc.filename or project}: {exc.strerror or exc}", EXIT_ERROR
    if isinstance(exc, ImportError):
        return f"{project}: hooks: cannot import the hooks module: {exc}", EXIT_ERROR
    return f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", EXIT_ERROR


def _one_line(text: str) -> str:
    return " ".join(text.split())
