"""The run's edges through the CLI (docs/runs.md#a-run-that-cannot-reach-the-assistant): a run
whose first attempts cannot reach the assistant stops with one line and resumes once it can;
the attempts that did not run are run once more before grading, and count once."""

from __future__ import annotations

import errno
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.run import RunArchive
from soev_pipeline.view.index import RunIndex
from tests.support.cli import invoke
from tests.support.project import SECRET, dump, edit_yaml
from tests.support.thread_api import FakeThreadAPI, Reply, Response, problem

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


class Outage:
    """An assistant whose gateway answers 503 to the first opening of each question, and
    answers every later one: a short outage."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def __call__(self, text: str, history: list[str]) -> Reply | Response:
        self.asked[text] += 1
        if self.asked[text] == 1:
            return problem(503, "service_unavailable", "upstream is down")
        return Reply(ANSWER)


def test_the_attempts_that_did_not_run_run_once_more_and_count_once(tmp_path: Path) -> None:
    """Every attempt's first try gets a 503 (never a stop: the gateway, not the route), and
    runs when it is tried once more after the others. The report, a comparison, the viewer's
    index and a resume all read the later line, once."""
    outage = Outage()
    with FakeThreadAPI(outage) as system:
        project = _project(tmp_path / "p", system.url)
        assert invoke("run", "--project", project, "--run-id", "r0").status == 0
        outage.asked.clear()  # the outage again
        run = invoke("run", "--project", project, "--run-id", "r1")
        assert run.status == 0, run.err
        asked = len(system.requests)
        resumed = invoke("run", "--project", project, "--resume", "r1")
        assert resumed.status == 0, resumed.err
        assert len(system.requests) == asked  # nothing missing, nothing that did not run

    planned = CASES + 2
    for run_id in ("r0", "r1"):
        lines = _lines(project, run_id)
        assert len(lines) == 2 * planned  # the 503 and the retry, both kept
        assert [line["reply"] for line in lines[:planned]] == [None] * planned
        assert [line["reply"] for line in lines[planned:]] == [ANSWER] * planned
    found = invoke("report", "r1", "--project", project, "--json").json()
    assert found["inconclusive"] is False and found["unrun"] == {"attempts": 0, "codes": {}}
    assert found["overall"]["attempts"] == found["expected_attempts"] == planned
    assert found["overall"]["pass_rate"] == 1.0
    assert all(len(case["attempts"]) == 1 for case in found["cases"])
    compared = invoke("compare", "r1", "r0", "--project", project, "--json").json()
    assert compared["overall"]["pairs"] == planned and compared["unrun_cases"] == 0
    archive = RunArchive(project.parent / "runs", "r1")
    scoring = archive.latest_report_path()
    assert scoring is not None
    index = RunIndex.build(scoring.parent / "verdicts.jsonl", archive.evidence_path)
    assert len(index.cases) == CASES
    for entry in index.cases.values():
        assert (entry.attempts, entry.passed) == (1, 1)
        assert index.evidence(entry.case_id)[0].reply == ANSWER


def test_no_retry_unrun_leaves_them_and_a_resume_runs_them_once_more(tmp_path: Path) -> None:
    outage = Outage()
    with FakeThreadAPI(outage) as system:
        project = _project(tmp_path / "p", system.url)
        run = invoke("run", "--project", project, "--run-id", "r1", "--no-retry-unrun")
        assert run.status == 0, run.err
        assert len(_lines(project, "r1")) == CASES + 2
        found = invoke("report", "r1", "--project", project, "--json").json()
        assert found["inconclusive"] is True
        assert found["unrun"] == {"attempts": CASES + 2, "codes": {"service_unavailable": 19}}
        # a resume has nothing missing to run, and runs those that did not run once more
        assert invoke("run", "--project", project, "--resume", "r1").status == 0
    assert len(_lines(project, "r1")) == 2 * (CASES + 2)
    found = invoke("report", "r1", "--project", project, "--json").json()
    assert found["inconclusive"] is False and found["overall"]["pass_rate"] == 1.0


def test_retry_unrun_is_a_setting_of_project_yaml(tmp_path: Path) -> None:
    outage = Outage()
    with FakeThreadAPI(outage) as system:
        project = _project(tmp_path / "p", system.url, retry_unrun=False)
        assert invoke("run", "--project", project, "--run-id", "r1").status == 0
    assert len(_lines(project, "r1")) == CASES + 2
    found = invoke("report", "r1", "--project", project, "--json").json()
    assert found["unrun"]["attempts"] == CASES + 2

    for wrong in ("sometimes", 1, None):
        edit_yaml(project, lambda data, value=wrong: data["system"].update(retry_unrun=value))
        refused = invoke("run", "--project", project, "--run-id", "r2")
        assert refused.status == 1
        assert f"{project}: system.retry_unrun: Input should be a valid boolean" in (
            refused.error_line()
        )


class _FullDisk:
    """The evidence file of a disk that fills up after `room` lines: the next write puts
    half its line on disk and fails with ENOSPC, as a real full disk does."""

    def __init__(self, file: Any, room: int) -> None:
        self._file, self._room = file, room

    def write(self, text: str) -> int:
        if self._room <= 0:
            self._file.write(text[: len(text) // 2])
            self._file.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= 1
        return int(self._file.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def test_a_full_disk_stops_the_run_with_one_line_and_a_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk was `internal error: ExceptionGroup: unhandled errors in a TaskGroup`.
    Now it is one line naming the file, what is archived and how to resume; the half line
    it left is dropped by the resume, and every attempt is archived once."""
    from soev_pipeline.run.archive import EvidenceWriter

    opened = EvidenceWriter.__init__

    def full_disk(self: EvidenceWriter, path: Path) -> None:
        opened(self, path)
        self._file = _FullDisk(self._file, room=5)  # type: ignore[assignment]

    with FakeThreadAPI(_answer) as system:
        project = _project(tmp_path / "p", system.url, concurrency=2)
        with monkeypatch.context() as patched:
            patched.setattr(EvidenceWriter, "__init__", full_disk)
            run = invoke("run", "--project", project, "--run-id", "r1")
        assert run.status == 1, run.err
        line = run.error_line()
        evidence = project.parent / "runs" / "r1" / "evidence.jsonl"
        assert line.startswith(f"soev-evals: error: {evidence}: No space left on device; ")
        assert "internal error" not in line and "ExceptionGroup" not in line
        assert "5 attempts are archived in" in line
        assert line.endswith("free some space, then resume with: soev-evals run --resume r1")
        assert not evidence.read_bytes().endswith(b"\n")  # the half line
        resumed = invoke("run", "--project", project, "--resume", "r1")
        assert resumed.status == 0, resumed.err
    keys = Counter((line["case_id"], line["attempt"]) for line in _lines(project, "r1"))
    assert len(keys) == CASES + 2 and set(keys.values()) == {1}
