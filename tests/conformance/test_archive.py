"""The run archive through the CLI (docs/runs.md): the options of `run`, a resume
after a crash, a rescore with the criteria as they are now, and sealing the test split."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import invoke
from tests.support.project import SECRET, edit_yaml
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e


def evidence(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "evidence.jsonl").read_text().splitlines()]


def test_run_selects_suite_split_and_k_and_resume_runs_only_the_missing_attempts(
    copy: Path, system: FakeThreadAPI, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elders" / "runs"
    args = ("--project", copy, "--runs-dir", elsewhere)
    first = invoke("run", *args, "--suite", "privacy", "--split", "dev", "--k", "3")
    assert first.status == 0, first.err
    [run] = list(elsewhere.iterdir())
    assert re.fullmatch(r"\d{8}t\d{6}\.\d{3}z", run.name)  # a generated, sortable UTC id
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["suites"], manifest["split"], manifest["k"]) == (["privacy"], "dev", 3)
    lines = (run / "evidence.jsonl").read_text().splitlines(keepends=True)
    assert sorted((json.loads(line)["case_id"], json.loads(line)["attempt"]) for line in lines) == [
        ("priv-001", 0),
        ("priv-001", 1),
        ("priv-001", 2),
    ]
    assert not (copy.parent / "runs" / run.name).exists()

    (run / "evidence.jsonl").write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # a crash
    opened = len(system.routed("open"))
    resumed = invoke("run", *args, "--resume", run.name)
    assert resumed.status == 0, resumed.err
    assert len(system.routed("open")) - opened == 2
    assert (run / "evidence.jsonl").read_text().startswith(lines[0])
    assert sorted(line["attempt"] for line in evidence(run)) == [0, 1, 2]
    report = invoke("report", run.name, "--json", *args).json()
    assert (report["k"], report["split"], report["suites"]["privacy"]["attempts"]) == (3, "dev", 3)


def test_an_offline_rescore_grades_with_the_criteria_as_they_are_now(copy: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["system"]["base_url"] = data["judge"]["base_url"] = "http://127.0.0.1:9/"

    edit_yaml(copy, change)
    edit_yaml(
        copy.parent / "suites" / "kern" / "awb.yaml",
        lambda data: data["cases"][0]["criteria"].append(
            {"kind": "reply.contains", "substrings": ["dagen"]}
        ),
    )
    result = invoke("rescore", "b1", "--offline", "--project", copy)
    assert result.status == 0, result.err
    result.assert_no_test_content()
    report = invoke("report", "b1", "--json", "--project", copy).json()
    assert report["scoring"]["offline"] is True
    assert report["criteria"]["reply.contains"] == {
        "pass": 0,
        "fail": 2,
        "error": 0,
        "not_applicable": 0,
    }
    kern1 = next(case for case in report["cases"] if case["case_id"] == "kern-001")
    assert [attempt["passed"] for attempt in kern1["attempts"]] == [False, False]
    statuses = {v["kind"]: v["status"] for v in kern1["attempts"][0]["verdicts"]}
    assert statuses["rubric.judge"] == statuses["nuggets.coverage"] == "pass"  # from the cache
    scorings = sorted(path.name for path in (copy.parent / "runs" / "b1" / "scorings").iterdir())
    assert scorings == ["0001", "0002", "0003"]


def test_seal_then_a_changed_test_case_stops_a_run_naming_none(copy: Path) -> None:
    sealed = invoke("seal", "--project", copy)
    assert sealed.status == 0, sealed.err
    assert "sealed 2 test cases" in sealed.out
    sealed.assert_no_test_content()
    assert set(yaml.safe_load((copy.parent / "sealed-test.yaml").read_text())) == {
        "kern-t01",
        "priv-t01",
    }
    edit_yaml(
        copy.parent / "suites" / "kern" / "awb.yaml",
        lambda data: data["cases"][2].update(input=f"Anders {SECRET}"),
    )
    result = invoke("run", "--project", copy, "--run-id", "r1")
    assert result.status == 1
    assert "1 sealed test case changed" in result.error_line()
    result.assert_no_test_content()
    assert not (copy.parent / "runs" / "r1" / "manifest.json").exists()


def test_seal_append_adds_a_new_test_case_and_keeps_the_sealed_ones(copy: Path) -> None:
    assert invoke("seal", "--project", copy).status == 0
    before = yaml.safe_load((copy.parent / "sealed-test.yaml").read_text())
    new = {"id": "priv-t02", "split": "test", "input": f"Nog een vraag {SECRET}"}
    edit_yaml(
        copy.parent / "suites" / "privacy" / "persoonsgegevens.yaml",
        lambda data: data["cases"].append(new),
    )
    refused = invoke("run", "--project", copy, "--run-id", "r1")
    assert refused.status == 1
    assert "1 test case is not sealed" in refused.error_line()
    assert SECRET not in refused.text and "priv-t02" not in refused.text
    appended = invoke("seal", "--append", "--project", copy)
    assert appended.status == 0, appended.err
    assert SECRET not in appended.text and "priv-t02" not in appended.text
    after = yaml.safe_load((copy.parent / "sealed-test.yaml").read_text())
    assert set(after) == {"kern-t01", "priv-t01", "priv-t02"}
    assert {key: after[key] for key in before} == before
