"""Dagster's own command lines load the project: `dg check defs` and `dg list defs` through
`[tool.dg]` in pyproject.toml, and `dagster definitions validate` through a workspace file,
the repository's (one project) and the one `make ui` writes for the projects of
`$SOEV_PROJECTS`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from soev_pipeline.orchestration.location import workspace_for
from soev_pipeline.project.listing import read_projects
from tests.conftest import write_project

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(command: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if not key.startswith("SOEV_")}
    environment = {
        **base,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "SOEV_RUNS_DIR": str(tmp_path / "runs"),  # the demo's runs stay out of the repository
        "VIRTUAL_ENV": sys.prefix,
        **env,
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300
    )


def test_dg_checks_and_lists_the_definitions(tmp_path: Path) -> None:
    checked = _run([str(BIN / "dg"), "check", "defs"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All definitions loaded successfully." in checked.stdout

    listed = _run([str(BIN / "dg"), "list", "defs", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    definitions = json.loads(listed.stdout)
    assets = {asset["asset_key"] for asset in definitions["assets"]}
    assert {"suites", "evidence", "verdicts", "report", "judge_calibration"} <= assets
    assert "new_evaluation" in {job["name"] for job in definitions["jobs"]}


def test_dagster_validates_the_workspace_of_one_project_and_of_several(tmp_path: Path) -> None:
    one = _run([str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"], tmp_path)
    assert one.returncode == 0, one.stdout + one.stderr
    assert "Validation successful for code location soev-pipeline" in one.stdout

    write_project(tmp_path / "wet", "http://127.0.0.1:9")
    write_project(tmp_path / "huur", "http://127.0.0.1:9")
    listing = tmp_path / "projects.yaml"
    listing.write_text("projects:\n  wet: wet/project.yaml\n  huur: huur/project.yaml\n")
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(workspace_for(read_projects(listing)), encoding="utf-8")
    command = [str(BIN / "dagster"), "definitions", "validate", "-w", str(workspace)]
    several = _run(command, tmp_path, SOEV_PROJECTS=str(listing))
    assert several.returncode == 0, several.stdout + several.stderr
    for name in ("wet", "huur"):
        assert f"Validation successful for code location {name}" in several.stdout
