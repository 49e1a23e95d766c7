"""The JUnit file of a report: parsed by a standard JUnit parser, the test split never named."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml

from soev_pipeline.core import Verdict
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run import GradedAttempt, GradingSummary, build_manifest, build_report
from soev_pipeline.run.junit import TEST_SPLIT, write_junit
from soev_pipeline.run.run_attempts import attempts_from_graded


def _attempt(case_id: str, suite: str, split: str, attempt: int, passed: bool) -> GradedAttempt:
    verdict = Verdict(
        kind="citations.required",
        status="pass" if passed else "fail",
        detail="0/1 source groups met <&> “quoted”",
        gate=True,
    )
    return GradedAttempt(
        case_id=case_id,
        suite=suite,
        split=split,  # type: ignore[arg-type]
        attempt=attempt,
        score=1.0 if passed else 0.0,
        passed=passed,
        verdicts=(verdict,),
    )


def test_a_junit_file_per_suite_with_an_aggregated_test_split(tmp_path: Path) -> None:
    graded = [
        _attempt("kern-001", "kern", "dev", 0, True),
        _attempt("kern-001", "kern", "dev", 1, True),
        _attempt("kern-002", "kern", "dev", 0, True),
        _attempt("kern-002", "kern", "dev", 1, False),
        _attempt("kern-geheim-1", "kern", "test", 0, True),
        _attempt("kern-geheim-1", "kern", "test", 1, True),
        _attempt("kern-geheim-2", "kern", "test", 0, False),
        _attempt("kern-geheim-2", "kern", "test", 1, True),
        _attempt("priv-001", "privacy", "dev", 0, True),
        _attempt("priv-001", "privacy", "dev", 1, True),
    ]
    cases = {attempt.case_id: "d" for attempt in graded}
    manifest = build_manifest(
        run_id="r1", project="p", suites=["kern", "privacy"], split=None, k=2, cases=[], shas={}
    ).model_copy(update={"cases": cases})
    summary = GradingSummary(
        scoring="0001",
        created_at="2026-01-01T00:00:00+00:00",
        attempts=len(graded),
        skipped=0,
        statuses={"pass": 7, "fail": 3, "error": 0, "not_applicable": 0},
        criterion_versions={},
        prompts={},
        offline=False,
        judge=None,
    )
    report = build_report(manifest, graded, scoring=summary)
    path = tmp_path / "junit.xml"
    write_junit(path, report, attempts_from_graded(manifest, graded))

    text = path.read_text(encoding="utf-8")
    assert "geheim" not in text
    xml = JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    assert list(suites) == ["kern", "privacy"]
    kern = {case.name: case for case in suites["kern"]}
    assert list(kern) == ["kern-001", "kern-002", TEST_SPLIT]
    assert all(case.classname == "kern" for case in kern.values())
    assert kern["kern-001"].is_passed
    failure = kern["kern-002"].result[0]
    assert isinstance(failure, Failure)
    assert failure.message == "1 of 2 attempts failed: citations.required"
    assert "attempt 1: citations.required fail (gate): 0/1 source groups met <&>" in failure.text
    split = kern[TEST_SPLIT].result[0]
    assert split.message == "1 of 2 test cases did not pass every attempt"
    assert (suites["kern"].tests, suites["kern"].failures) == (3, 2)
    assert [case.is_passed for case in suites["privacy"]] == [True]


def _one_failing_report(detail: str) -> tuple[Any, Any]:
    verdict = Verdict(kind="reply.contains", status="fail", detail=detail)
    graded = [
        GradedAttempt(
            case_id="kern-001",
            suite="kern",
            split="dev",
            attempt=0,
            score=0.0,
            passed=False,
            verdicts=(verdict,),
        )
    ]
    manifest = build_manifest(
        run_id="r1", project="p", suites=["kern"], split=None, k=1, cases=[], shas={}
    ).model_copy(update={"cases": {"kern-001": "d"}})
    summary = GradingSummary(
        scoring="0001",
        created_at="2026-01-01T00:00:00+00:00",
        attempts=1,
        skipped=0,
        statuses={"pass": 0, "fail": 1, "error": 0, "not_applicable": 0},
        criterion_versions={},
        prompts={},
        offline=False,
        judge=None,
    )
    report = build_report(manifest, graded, scoring=summary)
    return report, attempts_from_graded(manifest, graded)


def test_control_characters_of_a_reply_keep_the_xml_well_formed(tmp_path: Path) -> None:
    report, attempts = _one_failing_report("quoted \x00 NUL, \x01, \x1b[31m ESC and \ud800 half")
    path = write_junit(tmp_path / "junit.xml", report, attempts)
    text = path.read_text(encoding="utf-8")
    ET.fromstring(text.encode("utf-8"))  # a strict XML parser reads it
    assert "\x00" not in text and "\x1b" not in text and "\\x1b" in text
    (case,) = next(iter(JUnitXml.fromfile(str(path))))
    assert "\\x00 NUL" in case.result[0].text


@pytest.mark.parametrize("target", ["a folder", "/dev/null", "a file as folder"])
def test_the_junit_file_never_replaces_a_folder_or_a_device(tmp_path: Path, target: str) -> None:
    report, attempts = _one_failing_report("niet gevonden")
    (tmp_path / "file").write_text("", encoding="utf-8")
    path = {
        "a folder": tmp_path,
        "/dev/null": Path("/dev/null"),
        "a file as folder": tmp_path / "file" / "junit.xml",
    }[target]
    before = sorted(tmp_path.iterdir())
    with pytest.raises(ProjectError, match="--junit"):
        write_junit(path, report, attempts)
    assert sorted(tmp_path.iterdir()) == before  # no temporary file left behind
    assert Path("/dev/null").is_char_device()


def test_the_folder_of_the_junit_file_is_made(tmp_path: Path) -> None:
    report, attempts = _one_failing_report("niet gevonden")
    path = write_junit(tmp_path / "artifacts" / "junit.xml", report, attempts)
    assert path.read_text(encoding="utf-8").startswith("<?xml")
    assert sorted(p.name for p in path.parent.iterdir()) == ["junit.xml"]
