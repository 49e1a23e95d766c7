"""Where a project keeps its runs and state, and which Dagster instance a command uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.project.paths import ProjectPaths


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
