"""describe_error: every error of the user's files becomes one line naming the file and the
place, with exit status 1; a bug of ours says so."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from soev_pipeline.cli import SealChangedError, load
from soev_pipeline.cli.errors import EXIT_ERROR, describe_error, is_user_error
from soev_pipeline.core.errors import ProjectError
from tests.support.project import edit_yaml, write_project


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", "http://127.0.0.1:9/")


def message_of(path: Path) -> str:
    """The message for what `load` raises on the project at `path`."""
    with pytest.raises(Exception) as raised:
        load(path)
    assert is_user_error(raised.value)
    message, status = describe_error(raised.value, argparse.Namespace(project=path))
    assert status == EXIT_ERROR
    assert "\n" not in message
    return message


CASES: dict[str, tuple[Callable[[Path], object], str]] = {
    "unknown key": (lambda p: edit_yaml(p, lambda d: d.update(bogus=1)), "{p}: bogus: unknown key"),
    "nested unknown key": (
        lambda p: edit_yaml(p, lambda d: d["system"].update(retries=3)),
        "{p}: system.retries: unknown key",
    ),
    "YAML syntax": (lambda p: p.write_text("name: [x\n"), "{p}: line 2"),
    "missing file": (
        lambda p: (p.parent / "rubrics" / "termijn.md").unlink(),
        "{d}/rubrics/termijn.md: No such file",
    ),
    "hooks import": (
        lambda p: (p.parent / "hooks.py").write_text("import bestaat_niet\n"),
        "{d}/hooks.py:1: hooks: ModuleNotFoundError",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_error_of_the_users_files_is_one_line_naming_the_place(path: Path, name: str) -> None:
    change, expected = CASES[name]
    change(path)
    assert expected.format(p=path, d=path.parent) in message_of(path)


def test_a_multi_line_message_is_joined_into_one() -> None:
    message, status = describe_error(ProjectError("eerste\n  tweede"), argparse.Namespace())
    assert (message, status) == ("eerste tweede", EXIT_ERROR)


def test_a_changed_seal_shows_its_count_only() -> None:
    message, _ = describe_error(SealChangedError(["kern-t01"]), argparse.Namespace())
    assert "1" in message and "kern-t01" not in message


def test_a_bug_is_an_internal_error() -> None:
    error = KeyError("x")
    assert not is_user_error(error)
    message, status = describe_error(error, argparse.Namespace())
    assert (message, status) == ("internal error: KeyError: 'x'", EXIT_ERROR)
