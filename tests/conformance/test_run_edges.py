"""The run's edges through the CLI (docs/runs.md#a-run-that-cannot-reach-the-assistant): a run
whose first attempts cannot reach the assistant stops with one line and resumes once it can."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import invoke
from tests.support.project import SECRET, dump, edit_yaml
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = pytest.mark.e2e

CASES = 17
"""Dev cases of the project; with its 2 test cases and k = 2, 38 attempts: more than 20."""
ANSWER = "De termijn is zes weken."


def _project(root: Path, url: str, **system: Any) -> Path:
    cases = [{"id": f"e-{i:02d}", "input": f"Vraag {i} over bezwaar?"} for i in range(CASES)]
    cases += [{"id": f"e-t{i}", "split": "test", "input": f"Geheim {i} {SECRET}"} for i in (0, 1)]
    dump(
        root / "suites" / "edges.yaml",
        {"suite": "edges", "criteria": [{"kind": "run.no_failure", "gate": True}], "cases": cases},
    )
    dump(
        root / "project.yaml",
        {
            "name": "randen",
            "system": {"base_url": url, "agent": "a", "max_retries": 0, **system},
            "suites": [{"name": "edges", "files": "suites/edges.yaml"}],
        },
    )
    return root / "project.yaml"


def _answer(text: str, history: list[str]) -> Reply:
    return Reply(ANSWER)


def _lines(project: Path, run_id: str) -> list[dict[str, Any]]:
    path = project.parent / "runs" / run_id / "evidence.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_wrong_route_stops_the_run_and_a_resume_finishes_it(tmp_path: Path) -> None:
    """A nightly pointed at a wrong route got 404 on every attempt and reported a regression
    of 76 points. Now the first 20 attempts to fail so stop the run (exit 2, one line), the
    attempts in flight are cancelled, nothing is archived, and nothing is reported; once the
    route is right, `--resume` runs every attempt once."""
    with FakeThreadAPI(_answer) as system:
        project = _project(tmp_path / "p", system.url + "verkeerd/", concurrency=4)
        run = invoke("run", "--project", project, "--k", "2", "--run-id", "r1")
        assert run.status == 2, run.err
        line = run.error_line()
        assert line.startswith(f"soev-evals: error: {project}: system.base_url ")
        assert f"{system.url}verkeerd/: the first 20 attempts of run 'r1' all failed" in line
        assert "with HTTP 404 before any reply (HTTP 404: " in line
        assert "soev-evals run --resume r1" in line
        run.assert_no_test_content()
        assert len(system.requests) < 20 + 4  # the rest were never sent
        assert _lines(project, "r1") == []
        report = invoke("report", "r1", "--project", project)
        assert report.status == 1 and "has no scoring yet" in report.error_line()

        edit_yaml(project, lambda data: data["system"].update(base_url=system.url))
        resumed = invoke("run", "--project", project, "--resume", "r1")
        assert resumed.status == 0, resumed.err
    keys = Counter((line["case_id"], line["attempt"]) for line in _lines(project, "r1"))
    assert len(keys) == 2 * (CASES + 2) and set(keys.values()) == {1}
    found = invoke("report", "r1", "--project", project, "--json").json()
    assert found["overall"]["pass_rate"] == 1.0 and found["unrun"]["attempts"] == 0


def test_a_wrong_key_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANDEN_KEY", "fout")
    with FakeThreadAPI(_answer, token="goed") as system:
        project = _project(tmp_path / "p", system.url, api_key_env="RANDEN_KEY")
        run = invoke("run", "--project", project, "--run-id", "r1")
    assert run.status == 2, run.err
    assert "all failed with HTTP 401 before any reply" in run.error_line()
    assert "fout" not in run.text
