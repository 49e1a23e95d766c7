"""The list of projects one code location serves (`$SOEV_PROJECTS`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project import ProjectPaths
from soev_pipeline.project.listing import listing_of, read_projects, view_url, view_url_env


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_both_entry_forms_resolve_against_the_file(tmp_path: Path) -> None:
    listing = _write(
        tmp_path / "projects.yaml",
        "projects:\n"
        "  wetwijzer: a/project.yaml\n"
        "  huurwijzer:\n"
        "    project: b/project.yaml\n"
        "    runs_dir: /data/runs/huur\n",
    )
    first, second = read_projects(listing)
    assert (first.name, first.project_file, first.runs_dir) == (
        "wetwijzer",
        tmp_path / "a" / "project.yaml",
        None,
    )
    assert (second.name, second.project_file, second.runs_dir) == (
        "huurwijzer",
        tmp_path / "b" / "project.yaml",
        Path("/data/runs/huur"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("projects:\n  Wet-Wijzer: a.yaml\n", "projects.Wet-Wijzer: a project's name must be"),
        ("projects:\n  a: {project: a.yaml, runs: r}\n", "projects.a.runs: unknown key"),
        ("projekts:\n  a: a.yaml\n", "projects: Field required"),
        ("projects: {}\n", "projects: Dictionary should have at least 1 item"),
        ("projects:\n  a: x/p.yaml\n  b: x/p.yaml\n", "projects.b: "),
        ("projects: [\n", "line 2"),
        ("projects:\n  a: 5\n", "projects.a: give the path"),
        ("projects:\n  a: {project: ''}\n", "projects.a.project: "),
        (
            "projects:\n  a: {project: a.yaml, runs_dir: 'gs://b/runs'}\n",
            "projects.a.runs_dir: gs://b/runs: a runs folder is a folder or s3://bucket/prefix",
        ),
    ],
)
def test_a_wrong_list_is_one_line_naming_the_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    listing = _write(tmp_path / "projects.yaml", text)
    with pytest.raises(ProjectError) as raised:
        read_projects(listing)
    assert str(raised.value).startswith(f"{listing}")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_list_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="cannot read the projects file"):
        read_projects(tmp_path / "nowhere.yaml")


def test_a_listed_project_takes_its_runs_folder_unless_one_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = _write(
        tmp_path / "projects.yaml",
        "projects:\n  a:\n    project: a/project.yaml\n    runs_dir: shared/a\n",
    )
    monkeypatch.setenv("SOEV_PROJECTS", str(listing))
    project_file = tmp_path / "a" / "project.yaml"
    assert listing_of(project_file) is not None
    assert ProjectPaths.of(project_file).runs == tmp_path / "shared" / "a"
    assert ProjectPaths.of(project_file, tmp_path / "mine").runs == tmp_path / "mine"
    other = tmp_path / "other" / "project.yaml"
    assert listing_of(other) is None
    assert ProjectPaths.of(other).runs == tmp_path / "other" / "runs"


def test_each_listed_project_has_a_viewer_address_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert view_url_env(None) == "SOEV_VIEW_URL"
    assert view_url_env("huur_wijzer") == "SOEV_VIEW_URL_HUUR_WIJZER"
    monkeypatch.setenv("SOEV_VIEW_URL", "http://127.0.0.1:8766/")
    monkeypatch.setenv("SOEV_VIEW_URL_WET", "http://127.0.0.1:9001")
    monkeypatch.delenv("SOEV_VIEW_URL_HUUR", raising=False)
    assert view_url(None) == "http://127.0.0.1:8766"
    assert view_url("wet") == "http://127.0.0.1:9001"
    # no link rather than a link to another project's viewer, which would answer 404
    assert view_url("huur") is None
    monkeypatch.setenv("SOEV_VIEW_URL_HUUR", "")
    assert view_url("huur") is None
