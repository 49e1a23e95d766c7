"""`soev-evals view` and `report RUN --html FILE` through the command line."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.cli import invoke
from tests.view.conftest import TwoRuns, Viewer

pytestmark = pytest.mark.e2e


def test_report_html_writes_the_file_beside_the_usual_report(
    two_runs: TwoRuns, tmp_path: Path
) -> None:
    target = tmp_path / "artifacts" / "soev-report.html"
    project = two_runs.loaded.path
    done = invoke("report", "b1", "--project", project, "--html", target, "--json")
    assert done.status == 0, done.text
    assert done.json()["run_id"] == "b1"  # stdout is still the report
    html = target.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and 'Run <span class="id">b1</span>' in html
    done.assert_no_test_content()


def test_report_html_of_a_missing_run_is_one_line_and_no_file(
    two_runs: TwoRuns, tmp_path: Path
) -> None:
    target = tmp_path / "r.html"
    done = invoke("report", "nope", "--project", two_runs.loaded.path, "--html", target)
    assert done.status == 1
    assert "no run 'nope'" in done.error_line()
    assert not target.exists()


@pytest.mark.parametrize(
    ("option", "target", "what"),
    [
        ("--html", "runs/b1/evidence.jsonl", "lies in the runs folder"),
        ("--html", "project.yaml", "is the project file"),
        ("--junit", "runs/b1/scorings/0001/report.json", "lies in the runs folder"),
        ("--junit", "link.xml", "is a symbolic link"),
    ],
)
def test_an_output_flag_never_replaces_the_archive_the_project_or_a_link_target(
    own_runs: TwoRuns, option: str, target: str, what: str
) -> None:
    directory = own_runs.loaded.path.parent
    (directory / "link.xml").symlink_to(directory / "project.yaml")
    before = {path: path.read_bytes() for path in directory.rglob("*") if path.is_file()}
    done = invoke("report", "b1", "--project", own_runs.loaded.path, option, directory / target)
    assert done.status == 2, done.text
    line = done.error_line()
    assert line.startswith(f"soev-evals: error: {option} ") and what in line
    after = {path: path.read_bytes() for path in directory.rglob("*") if path.is_file()}
    assert after == before
    assert done.out == ""  # refused before the report is printed


def test_view_refuses_another_host_without_a_token(
    two_runs: TwoRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOEV_VIEW_TOKEN", raising=False)
    done = invoke("view", "--project", two_runs.loaded.path, "--host", "0.0.0.0")
    assert done.status == 2
    line = done.error_line()
    assert "--host 0.0.0.0 is not a loopback address" in line and "--token" in line


@pytest.mark.parametrize("token", ["x", "   "])
def test_view_refuses_a_weak_token_off_loopback(two_runs: TwoRuns, token: str) -> None:
    done = invoke("view", "--project", two_runs.loaded.path, "--host", "0.0.0.0", "--token", token)
    assert done.status == 2
    line = done.error_line()
    assert "the token is too weak" in line and "at least 16" in line


def test_view_refuses_a_port_out_of_range(two_runs: TwoRuns) -> None:
    done = invoke("view", "--project", two_runs.loaded.path, "--port", "99999")
    assert done.status == 2
    assert "--port" in done.error_line()


def test_view_of_a_missing_project_is_one_line(tmp_path: Path) -> None:
    done = invoke("view", "--project", tmp_path / "nope.yaml")
    assert done.status == 1
    assert "no such project file" in done.error_line()


def test_view_serves_until_ctrl_c(two_runs: TwoRuns) -> None:
    running = Viewer(two_runs.loaded.path, "--runs-dir", str(two_runs.runs))
    try:
        assert running.url.startswith("http://127.0.0.1:") and "token" not in running.url
        with urllib.request.urlopen(running.origin + "/runs/b1", timeout=60) as response:
            page = response.read().decode()
            assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert "kern-001" in page
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(running.origin + "/runs/b1/cases/kern-t01", timeout=60)
        refused.value.close()
        assert refused.value.code == 404
    finally:
        status, err = running.stop()
    assert status == 130 and err.rstrip().endswith("interrupted")
    assert "Traceback" not in err


def test_view_with_a_token_from_the_environment(two_runs: TwoRuns) -> None:
    running = Viewer(
        two_runs.loaded.path,
        "--runs-dir",
        str(two_runs.runs),
        "--host",
        "0.0.0.0",
        env={"SOEV_VIEW_TOKEN": "uit-de-omgeving-2026"},
    )
    try:
        assert running.url.endswith("/?token=uit-de-omgeving-2026")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(running.origin + "/", timeout=60)
        refused.value.close()
        assert refused.value.code == 401
        request = urllib.request.Request(
            running.origin + "/", headers={"Authorization": "Bearer uit-de-omgeving-2026"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200
    finally:
        running.stop()
