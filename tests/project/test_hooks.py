"""A hooks module that fails says where, in one line; other import errors are not blamed on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project.hooks import import_hooks


def _hooks(tmp_path: Path, source: str, name: str = "proj_hooks_x") -> tuple[str, Path]:
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    return name, tmp_path


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\nraise ValueError('kapot')\n", r"proj_hooks_x.py:2: hooks: ValueError: kapot"),
        ("x = (\n", r"proj_hooks_x.py:1: hooks: SyntaxError: "),
        ("import sys\nsys.exit(3)\n", r"proj_hooks_x.py:2: hooks: the module called sys.exit\(3\)"),
        (
            "import een_driver_die_er_niet_is\n",
            r"proj_hooks_x.py:1: hooks: ModuleNotFoundError: No module named 'een_driver",
        ),
    ],
    ids=["exception", "syntax", "sys.exit", "its own import"],
)
def test_a_failing_hooks_module_names_file_and_line(
    tmp_path: Path, source: str, expected: str
) -> None:
    name, directory = _hooks(tmp_path, source)
    with pytest.raises(ProjectError, match=expected) as raised:
        import_hooks(name, directory, project_file=directory / "project.yaml")
    assert "\n" not in str(raised.value)


def test_a_missing_hooks_module_names_the_project_file(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"project.yaml: hooks: no module 'geen_hooks'"):
        import_hooks("geen_hooks", tmp_path, project_file=tmp_path / "project.yaml")


def test_a_good_hooks_module_imports(tmp_path: Path) -> None:
    name, directory = _hooks(tmp_path, "CRITERIA = []\n", name="proj_hooks_ok")
    module = import_hooks(name, directory, project_file=directory / "project.yaml")
    assert module.CRITERIA == []
