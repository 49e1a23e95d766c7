"""run, report --json, rescore --offline and seal, through the CLI, against a scripted system."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from soev_pipeline.cli import main
from tests.conftest import SECRET
from tests.support.scripted_system import ScriptedSystem


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_run_report_rescore_seal(
    project_path: Path, system: ScriptedSystem, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _run(capsys, "run", "--project", str(project_path), "--run-id", "r1")
    assert status == 0, err
    assert "kern" in out and "privacy" in out
    assert system.opened == 6 and system.inputs == 1 and system.deleted == 6

    status, out, err = _run(capsys, "report", "r1", "--json", "--project", str(project_path))
    assert status == 0, err
    report = json.loads(out)
    assert report["run_id"] == "r1" and report["k"] == 1
    assert set(report["suites"]) == {"kern", "privacy"}
    assert report["suites"]["kern"]["cases"] == 4
    assert report["suites"]["kern"]["attempts"] == 4
    kern = {case["case_id"]: case for case in report["cases"] if case["suite"] == "kern"}
    assert set(kern) == {"kern-001", "kern-002", "kern-003"}
    assert kern["kern-001"]["pass_rate"] == 1.0
    assert kern["kern-003"]["pass_rate"] == 0.0
    failed = kern["kern-003"]["attempts"][0]
    assert failed["score"] == 0.0 and not failed["passed"]
    assert {v["kind"]: v["status"] for v in failed["verdicts"]}["run.no_failure"] == "fail"
    assert set(failed["verdicts"][0]) == {"kind", "status", "detail", "weight", "gate"}
    assert report["criteria"]["run.no_failure"] == {
        "pass": 4,
        "fail": 1,
        "error": 0,
        "not_applicable": 0,
    }
    privacy = {case["case_id"]: case for case in report["cases"] if case["suite"] == "privacy"}
    usage = privacy["priv-001"]["attempts"][0]["verdicts"][0]
    assert usage["kind"] == "usage.max_tokens" and usage["status"] == "error"
    assert all(case["split"] == "dev" for case in report["cases"])

    calls_before = system.calls
    status, out, err = _run(capsys, "rescore", "r1", "--offline", "--project", str(project_path))
    assert status == 0, err
    assert system.calls == calls_before
    scorings = sorted((project_path.parent / "runs" / "r1" / "scorings").iterdir())
    assert [path.name for path in scorings] == ["0001", "0002"]

    status, out, err = _run(capsys, "seal", "--project", str(project_path))
    assert status == 0, err
    assert "sealed 2 test cases" in out
    sealed = (project_path.parent / "sealed-test.yaml").read_text(encoding="utf-8")
    assert "kern-t01" in sealed and "priv-t01" in sealed


def test_test_cases_never_show(
    project_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    status, out, err = _run(capsys, "run", "--project", str(project_path), "--run-id", "r2")
    assert status == 0, err
    texts = [out, err, caplog.text]
    for argv in (["report", "r2", "--json"], ["report", "r2"]):
        status, out, err = _run(capsys, *argv, "--project", str(project_path))
        texts += [out, err]
    status, out, err = _run(capsys, "rescore", "r2", "--offline", "--project", str(project_path))
    texts += [out, err]
    for text in texts:
        assert SECRET not in text
        assert "kern-t01" not in text and "priv-t01" not in text
    report = json.loads(texts[3])
    assert report["splits"]["test"]["cases"] == 2


def test_resume_refuses_changed_cases(
    project_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "run", "--project", str(project_path), "--run-id", "r3")[0] == 0
    kern = project_path.parent / "suites" / "kern" / "kern.yaml"
    kern.write_text(kern.read_text().replace("max: 100", "max: 101"), encoding="utf-8")
    status, _out, err = _run(capsys, "run", "--project", str(project_path), "--resume", "r3")
    assert status == 1
    assert "cannot be resumed" in err and "kern-001" in err
    assert "kern-t01" not in err and SECRET not in err
    assert len(err.strip().splitlines()) == 1


def test_unreachable_system_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import write_project

    path = write_project(tmp_path / "p", "http://127.0.0.1:9/")
    status, _out, err = _run(capsys, "run", "--project", str(path))
    assert status == 1
    assert "system.base_url: cannot reach http://127.0.0.1:9/" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p" / "runs").exists() or not any((tmp_path / "p" / "runs").iterdir())


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--split", "train"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        main(["report"])
    assert exited.value.code == 2


def test_bad_run_id_is_a_usage_error(
    project_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--project", str(project_path), "--run-id", "Bad,Id"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "run id 'Bad,Id' is not valid" in err and len(err.strip().splitlines()) == 1


def test_report_of_missing_run(project_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = _run(capsys, "report", "nope", "--project", str(project_path))
    assert status == 1 and "no run 'nope'" in err
