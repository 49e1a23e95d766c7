"""The typed results: the report's JSON shape, its round trip, and the generated schema."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import ValidationError

from soev_pipeline.core import Verdict
from soev_pipeline.core.power import CasePopulation, detectable_drop
from soev_pipeline.run import (
    GradedAttempt,
    GradingSummary,
    Manifest,
    Report,
    build_manifest,
    build_report,
)
from soev_pipeline.run.run_attempts import RunAttempts, attempts_from_graded

REPO = Path(__file__).resolve().parents[2]
PUBLIC_VERDICT_KEYS = ["kind", "status", "detail", "weight", "gate"]


def _schema_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "report_schema", REPO / "scripts/report_schema.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manifest(run_id: str, k: int = 2) -> Manifest:
    manifest = build_manifest(
        run_id=run_id, project="p", suites=["kern"], split=None, k=k, cases=[], shas={}
    )
    cases = {"kern-001": "d1", "kern-002": "d2", "kern-t01": "d3"}
    return manifest.model_copy(update={"cases": cases, "prompts": {"rubric.judge": "abc"}})


def _summary(scoring: str = "0001") -> GradingSummary:
    return GradingSummary(
        scoring=scoring,
        created_at=datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        attempts=6,
        skipped=0,
        statuses={"pass": 7, "fail": 3, "error": 1, "not_applicable": 1},
        criterion_versions={"citations.required": "1", "rubric.judge": "2"},
        prompts={"rubric.judge": "abc"},
        offline=False,
        judge={"requests": 2, "calls": 2, "cache_hits": 0, "failures": 0},
    )


def _attempt(case_id: str, attempt: int, passed: bool) -> GradedAttempt:
    split = "test" if "-t" in case_id else "dev"
    judged = Verdict(
        kind="rubric.judge",
        status="pass" if passed else "fail",
        detail="label 'goed' — “helder”",
        version="2",
        judge_model="m",
        prompt_sha="abc",
        rubric_sha="def",
    )
    cited = Verdict(kind="citations.required", status="pass", weight=2.0, gate=True)
    return GradedAttempt(
        case_id=case_id,
        suite="kern",
        split=split,
        attempt=attempt,
        score=1.0 if passed else 2 / 3,
        passed=passed,
        verdicts=(cited, judged),
    )


def _graded(flip: bool = False) -> list[GradedAttempt]:
    return [
        _attempt("kern-001", 1, not flip),
        _attempt("kern-001", 0, True),
        _attempt("kern-002", 0, flip),
        _attempt("kern-002", 1, False),
        _attempt("kern-t01", 0, True),
        _attempt("kern-t01", 1, True),
    ]


def _report(
    run_id: str = "r2", *, flip: bool = False, previous: RunAttempts | None = None
) -> Report:
    return build_report(_manifest(run_id), _graded(flip), scoring=_summary(), previous=previous)


def test_the_schemas_in_docs_are_current() -> None:
    script = _schema_script()
    written = (REPO / "docs" / "report.schema.json").read_text(encoding="utf-8")
    assert written == script.render(), "run: python scripts/report_schema.py --write"
    on_disk = (REPO / "docs" / "report-file.schema.json").read_text(encoding="utf-8")
    assert on_disk == script.render_file(), "run: python scripts/report_schema.py --write"


def test_the_schema_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    script = _schema_script()
    path, file_path = tmp_path / "report.schema.json", tmp_path / "report-file.schema.json"
    path.write_text("{}\n", encoding="utf-8")
    assert script.main(["--check"], path=path, file_path=file_path) == 1
    assert script.main(["--write"], path=path, file_path=file_path) == 0
    assert script.main(["--check"], path=path, file_path=file_path) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["title"] == "Report"
    assert json.loads(file_path.read_text(encoding="utf-8"))["title"] == "ReportFile"


def test_both_files_validate_against_their_published_schemas(tmp_path: Path) -> None:
    """What `report --json` prints against report.schema.json, and a scoring's report.json
    against report-file.schema.json: a consumer that validates either file passes."""
    import jsonschema

    from soev_pipeline.run.report import write_report

    report = _report(previous=attempts_from_graded(_manifest("r1"), _graded(False)))
    printed = json.loads(json.dumps(report.model_dump(mode="json")))
    schemas = REPO / "docs"
    jsonschema.validate(printed, json.loads((schemas / "report.schema.json").read_text()))
    write_report(tmp_path, report)
    on_disk = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert "cases" not in on_disk
    jsonschema.validate(on_disk, json.loads((schemas / "report-file.schema.json").read_text()))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(on_disk, json.loads((schemas / "report.schema.json").read_text()))


def test_the_report_json_keeps_the_key_order_of_section_8() -> None:
    data = _report().model_dump(mode="json")
    assert list(data) == [
        "run_id",
        "project",
        "k",
        "split",
        "suites",
        "splits",
        "overall",
        "criteria",
        "cases",
        "expected_attempts",
        "unrun",
        "inconclusive",
        "scoring",
        "prompts",
        "previous",
    ]
    assert list(data["suites"]["kern"]) == [
        "cases",
        "attempts",
        "passed_attempts",
        "pass_rate",
        "mean_score",
        "pass_at_k",
        "pass_all_k",
        "pass_at",
        "stderr",
        "ci95",
        "detectable_drop",
        "unrun_attempts",
    ]
    assert list(data["overall"]) == list(data["suites"]["kern"])
    assert data["criteria"]["rubric.judge"] == {
        "pass": 4,
        "fail": 2,
        "error": 0,
        "not_applicable": 0,
    }
    assert list(data["criteria"]["rubric.judge"]) == ["pass", "fail", "error", "not_applicable"]
    case = data["cases"][0]
    assert list(case) == [
        "case_id",
        "suite",
        "split",
        "pass_rate",
        "mean_score",
        "pass_at_k",
        "pass_all_k",
        "attempts",
    ]
    assert list(case["attempts"][0]) == ["attempt", "passed", "score", "verdicts"]
    assert list(data["scoring"]) == list(GradingSummary.model_fields)


def test_a_verdict_in_a_report_holds_exactly_the_public_keys() -> None:
    data = _report().model_dump(mode="json")
    verdicts = [v for case in data["cases"] for a in case["attempts"] for v in a["verdicts"]]
    assert verdicts
    assert all(list(verdict) == PUBLIC_VERDICT_KEYS for verdict in verdicts)
    leaked = json.loads(json.dumps(data))
    leaked["cases"][0]["attempts"][0]["verdicts"][0]["judge_model"] = "m"
    with pytest.raises(ValidationError, match="judge_model"):
        Report.model_validate(leaked)


def test_a_report_holds_dev_cases_only_in_order() -> None:
    report = _report()
    assert [case.case_id for case in report.cases] == ["kern-001", "kern-002"]
    assert [a.attempt for a in report.cases[0].attempts] == [0, 1]
    assert report.suites["kern"].cases == 3
    assert report.splits["test"].cases == 1
    assert report.expected_attempts == 6


def test_a_report_round_trips_through_json_unchanged() -> None:
    earlier = attempts_from_graded(_manifest("r1"), _graded())
    report = _report("r2", flip=True, previous=earlier)
    assert report.previous is not None
    assert [change.case_id for change in report.previous.regressions] == ["kern-001"]
    assert [change.case_id for change in report.previous.improvements] == ["kern-002"]
    assert report.previous.suites["kern"].delta == pytest.approx(0.0)
    assert report.previous.baseline_id == "r1" and report.previous.overall.pairs == 3
    text = json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2)
    again = Report.model_validate_json(text)
    assert again == report
    assert json.dumps(again.model_dump(mode="json"), ensure_ascii=False, indent=2) == text
    assert Report.model_validate_json(report.model_dump_json(indent=2)) == report


def test_a_verdicts_line_keeps_its_keys_and_reads_the_earlier_format() -> None:
    graded = _attempt("kern-001", 0, True)
    line = graded.model_dump_json()
    data = json.loads(line)
    assert list(data) == ["case_id", "suite", "split", "attempt", "score", "passed", "verdicts"]
    assert data["verdicts"][1]["judge_model"] == "m"
    earlier = json.dumps(data, ensure_ascii=False)
    assert GradedAttempt.model_validate_json(earlier) == graded


def test_a_scoring_summary_round_trips() -> None:
    summary = _summary()
    assert GradingSummary.model_validate_json(summary.model_dump_json()) == summary
    assert list(summary.model_dump(mode="json")) == [
        "scoring",
        "created_at",
        "attempts",
        "skipped",
        "statuses",
        "criterion_versions",
        "prompts",
        "offline",
        "judge",
    ]


def _many(
    run_id: str, k: int, passes: dict[str, tuple[bool, ...]]
) -> tuple[Manifest, list[GradedAttempt]]:
    manifest = build_manifest(
        run_id=run_id, project="p", suites=["kern"], split=None, k=k, cases=[], shas={}
    ).model_copy(update={"cases": {case_id: f"d-{case_id}" for case_id in passes}})
    graded = [
        GradedAttempt(
            case_id=case_id,
            suite="kern",
            split="dev",
            attempt=n,
            score=None,
            passed=passed,
            verdicts=(),
        )
        for case_id, results in passes.items()
        for n, passed in enumerate(results)
    ]
    return manifest, graded


def test_the_detectable_drop_of_a_report() -> None:
    # k = 1: it needs the comparison with the run before. 40 cases, 24 pass now; 4 flipped
    # between the runs (2 each way): μ = 0.6, E[π²] = 0.6 − 4/80 = 0.55
    now = {f"c{i:02d}": (i < 24,) for i in range(40)}
    before = {**now, "c00": (False,), "c01": (False,), "c30": (True,), "c31": (True,)}
    manifest, graded = _many("r2", 1, now)
    alone = build_report(manifest, graded, scoring=_summary())
    assert alone.overall.detectable_drop is None and alone.overall.stderr is not None
    earlier = attempts_from_graded(*_many("r1", 1, before))
    report = build_report(manifest, graded, scoring=_summary(), previous=earlier)
    expected = detectable_drop(CasePopulation.of(0.6, 0.55), 40, 1)
    assert expected is not None
    assert report.overall.detectable_drop == pytest.approx(expected, abs=1e-9)
    assert report.suites["kern"].detectable_drop == report.overall.detectable_drop
    # k = 3: from the attempts themselves (no comparison needed)
    patterns = [(True, True, False), (True, True, True), (False, False, False)]
    manifest, graded = _many("r3", 3, {f"c{i:02d}": patterns[i % 3] for i in range(30)})
    report = build_report(manifest, graded, scoring=_summary())
    # μ = (2/3 + 1 + 0) / 3 = 5/9; E[π²] = (1/3 + 1 + 0) / 3 = 4/9
    expected = detectable_drop(CasePopulation.of(5 / 9, 4 / 9), 30, 3)
    assert report.overall.detectable_drop == pytest.approx(expected, abs=1e-6)


def test_a_report_written_before_unrun_attempts_were_counted_still_reads() -> None:
    earlier = attempts_from_graded(_manifest("r1"), _graded())
    data = _report("r2", flip=True, previous=earlier).model_dump(mode="json")
    for key in ("unrun", "inconclusive"):
        del data[key]
    for group in (data["overall"], *data["suites"].values(), *data["splits"].values()):
        del group["unrun_attempts"]
    previous = data["previous"]
    for key in ("unrun_cases", "unrun", "inconclusive"):
        del previous[key]
    del previous["overall"]["p_holm"]  # the family once held the suites alone
    old = Report.model_validate(data)
    assert old.overall.unrun_attempts == 0 and not old.inconclusive
    assert old.previous is not None and old.previous.overall.p_holm is None
    assert not old.previous.inconclusive and old.previous.unrun.run.attempts == 0
