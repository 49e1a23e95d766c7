"""Output files (`--junit FILE`, `--html FILE`): never onto a link, never into owned data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from soev_pipeline.core.errors import OutputPathError
from soev_pipeline.core.outputs import Owned, check_output, replace_file


def _write(text: str):  # type: ignore[no-untyped-def]
    return lambda temporary: temporary.write_text(text, encoding="utf-8")


def test_a_symbolic_link_at_the_path_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("data", encoding="utf-8")
    link = tmp_path / "out.html"
    link.symlink_to(target)
    with pytest.raises(OutputPathError, match=r"--html .*out.html: is a symbolic link"):
        replace_file(link, _write("<html>"), option="--html")
    assert target.read_text(encoding="utf-8") == "data"
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html", "precious.txt"]


def test_a_dangling_link_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "out.xml"
    link.symlink_to(tmp_path / "nowhere" / "made.xml")
    with pytest.raises(OutputPathError, match="symbolic link"):
        replace_file(link, _write("x"), option="--junit")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("where", ["the file", "a file in the folder", "through a linked folder"])
def test_an_owned_path_is_refused_and_kept(tmp_path: Path, where: str) -> None:
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    evidence = runs / "r1" / "evidence.jsonl"
    evidence.write_text("{}\n", encoding="utf-8")
    project = tmp_path / "project.yaml"
    project.write_text("name: p\n", encoding="utf-8")
    (tmp_path / "out").symlink_to(runs / "r1")
    path = {
        "the file": project,
        "a file in the folder": evidence,
        "through a linked folder": tmp_path / "out" / "evidence.jsonl",
    }[where]
    owned = [Owned(runs, "the runs folder"), Owned(project, "the project file")]
    with pytest.raises(
        OutputPathError, match=r"^--html .*: (is|lies in) the (runs folder|project file)"
    ):
        replace_file(path, _write("<html>"), option="--html", owned=owned)
    assert evidence.read_text(encoding="utf-8") == "{}\n"
    assert project.read_text(encoding="utf-8") == "name: p\n"
    assert sorted(p.name for p in (runs / "r1").iterdir()) == ["evidence.jsonl"]


def test_a_new_folder_inside_an_owned_one_is_not_made(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    with pytest.raises(OutputPathError, match="lies in the runs folder"):
        replace_file(
            runs / "new" / "r.html",
            _write("x"),
            option="--html",
            owned=[Owned(runs, "the runs folder")],
        )
    assert list(runs.iterdir()) == []


def test_a_path_beside_owned_ones_is_written(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    owned = [Owned(runs, "the runs folder"), Owned(tmp_path / "project.yaml", "the project file")]
    path = replace_file(tmp_path / "runs.html", _write("ok"), option="--html", owned=owned)
    assert path.read_text(encoding="utf-8") == "ok"
    assert check_output(Path("relative.xml"), option="--junit").is_absolute()


def test_the_temporary_file_is_made_anew_and_never_through_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link planted under the temporary name is never opened: the name is unguessable
    and the file is created with O_EXCL."""
    victim = tmp_path / "victim"
    victim.write_text("keep", encoding="utf-8")
    seen: list[Path] = []

    def write(temporary: Path) -> None:
        seen.append(temporary)
        assert temporary.exists() and not temporary.is_symlink()
        temporary.write_text("new", encoding="utf-8")

    path = replace_file(tmp_path / "r.html", write, option="--html")
    assert (
        path.read_text(encoding="utf-8") == "new" and victim.read_text(encoding="utf-8") == "keep"
    )
    assert seen[0].name.startswith(".r.html.") and not seen[0].exists()
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
