"""Where a project keeps its runs and state, and which Dagster instance a command uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project.paths import ProjectPaths, is_object_url


def test_the_runs_sit_beside_project_yaml_unless_runs_dir_says_otherwise(tmp_path: Path) -> None:
    beside = ProjectPaths.of(tmp_path / "p" / "project.yaml")
    assert beside.runs == tmp_path / "p" / "runs"
    moved = ProjectPaths.of(tmp_path / "p" / "project.yaml", tmp_path / "elders" / "runs")
    assert moved.runs == tmp_path / "elders" / "runs"
    assert moved.directory == tmp_path / "p"
    assert moved.judge_cache == tmp_path / "elders" / ".soev" / "judge-cache.sqlite"


def test_the_dagster_instance_is_dagster_home_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = ProjectPaths.of(tmp_path / "p" / "project.yaml", tmp_path / "archief" / "runs")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert paths.dagster_home == tmp_path / "home"
    monkeypatch.delenv("DAGSTER_HOME")
    assert paths.dagster_home == tmp_path / "archief" / ".soev" / "dagster"


@pytest.mark.parametrize("url", ["gs://bucket/runs", "az://container/runs", "https://host/runs"])
def test_a_url_of_a_store_other_than_s3_is_refused_not_made_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProjectError) as raised:
        ProjectPaths.of(tmp_path / "p" / "project.yaml", url)
    assert str(raised.value).startswith(f"{url}: a runs folder is a folder or s3://bucket/prefix")
    assert "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # no folder called `gs:` or `https:`


def test_an_s3_url_in_any_case_is_the_object_store() -> None:
    assert is_object_url("s3://bucket/runs") and is_object_url("S3://bucket/runs")
    assert not is_object_url("runs/s3") and not is_object_url(Path("s3://bucket"))
