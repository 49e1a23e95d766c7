"""The judge through the CLI: run, a rescore that asks nothing, a rubric edit that asks only
its own questions again, and an offline rescore from the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from soev_pipeline.cli import main
from tests.conftest import SECRET, write_project
from tests.judges.conftest import JudgeServer
from tests.support.scripted_system import ScriptedSystem

JUDGED = [
    {"kind": "behaviour.expected"},
    {"kind": "nuggets.coverage"},
    {
        "kind": "rubric.judge",
        "rubric": "rubrics/helder.md",
        "labels": ["goed", "slecht"],
        "pass_labels": ["goed"],
    },
]


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    server = JudgeServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def judged_project(tmp_path: Path, system: ScriptedSystem, judge: JudgeServer) -> Path:
    path = write_project(
        tmp_path / "p", system.url, judge={"base_url": judge.url, "model": "judge-model"}
    )
    (path.parent / "rubrics").mkdir()
    (path.parent / "rubrics" / "helder.md").write_text("Is het antwoord helder?", "utf-8")
    kern = path.parent / "suites" / "kern" / "kern.yaml"
    data = yaml.safe_load(kern.read_text(encoding="utf-8"))
    for case in data["cases"][:2] + data["cases"][3:]:
        case["nuggets"] = [
            {"text": "De termijn is zes weken."},
            {"text": "Bezwaar is gratis.", "vital": False},
        ]
        case["criteria"] = case["criteria"] + JUDGED
    kern.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 0, err
    assert SECRET not in out + err
    return out, err


def test_rescore_asks_the_judge_only_what_changed(
    judged_project: Path, judge: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    project = str(judged_project)
    _cli(capsys, "run", "--project", project, "--run-id", "j1")
    # 3 judged cases (two dev, one test) x (behaviour + 2 nuggets, vital or not + rubric)
    assert judge.calls == 12
    out, _ = _cli(capsys, "report", "j1", "--json", "--project", project)
    report = json.loads(out)
    assert report["scoring"]["judge"]["calls"] == 12
    assert report["criteria"]["rubric.judge"]["error"] == 0

    _cli(capsys, "rescore", "j1", "--project", project)
    assert judge.calls == 12
    out, _ = _cli(capsys, "report", "j1", "--json", "--project", project)
    rescored = json.loads(out)
    assert rescored["scoring"]["judge"]["calls"] == 0
    assert rescored["scoring"]["judge"]["cache_hits"] == 12
    assert rescored["criteria"] == report["criteria"]

    rubric = judged_project.parent / "rubrics" / "helder.md"
    rubric.write_text("Is het antwoord helder en kort?", encoding="utf-8")
    _cli(capsys, "rescore", "j1", "--project", project)
    assert judge.calls == 15
    assert {judge.user_inputs(i)["rubric"] for i in range(12, 15)} == {rubric.read_text()}
    assert all(judge.user_inputs(i)["labels"] == ["goed", "slecht"] for i in range(12, 15))

    judge.close()
    _cli(capsys, "rescore", "j1", "--offline", "--project", project)
    out, _ = _cli(capsys, "report", "j1", "--json", "--project", project)
    offline = json.loads(out)
    assert offline["scoring"]["offline"] is True
    assert offline["criteria"]["rubric.judge"]["error"] == 0
    assert offline["criteria"]["nuggets.coverage"]["error"] == 0


def test_offline_rescore_without_a_cached_answer_is_an_error_verdict(
    judged_project: Path, judge: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    project = str(judged_project)
    _cli(capsys, "run", "--project", project, "--run-id", "j2")
    judge.close()
    rubric = judged_project.parent / "rubrics" / "helder.md"
    rubric.write_text("Een nieuwe rubric die nooit is gevraagd.", encoding="utf-8")
    _cli(capsys, "rescore", "j2", "--offline", "--project", project)
    out, _ = _cli(capsys, "report", "j2", "--json", "--project", project)
    report = json.loads(out)
    assert report["criteria"]["rubric.judge"]["error"] == 3
    assert report["criteria"]["behaviour.expected"]["error"] == 0
    verdict = next(
        v
        for case in report["cases"]
        for attempt in case["attempts"]
        for v in attempt["verdicts"]
        if v["kind"] == "rubric.judge"
    )
    assert "offline" in verdict["detail"]


def test_resume_refuses_a_changed_rubric(
    judged_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = str(judged_project)
    _cli(capsys, "run", "--project", project, "--run-id", "j3")
    (judged_project.parent / "rubrics" / "helder.md").write_text("Anders.", encoding="utf-8")
    assert main(["run", "--project", project, "--resume", "j3"]) == 1
    err = capsys.readouterr().err
    assert "judge prompts or rubrics changed: rubrics/helder.md" in err
