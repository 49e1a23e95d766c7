"""A scoring's report on disk: report.json holds the aggregates, verdicts.jsonl the verdicts,
and reading them back gives the report as it was built, to the byte of `report --json`."""

from __future__ import annotations

import io
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from soev_pipeline.core import Verdict
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence, Failure, Turn
from soev_pipeline.run import (
    GradedAttempt,
    GradingSummary,
    Report,
    RunArchive,
    build_manifest,
    read_report,
)
from soev_pipeline.run.archive import REPORT, SCORING, VERDICTS, write_json_atomically
from soev_pipeline.run.service import aggregate

CASES = {
    "kern-002": ("kern", "dev"),
    "kern-001": ("kern", "dev"),
    "kern-t01": ("kern", "test"),
    "priv-001": ("privacy", "dev"),
    "priv-t01": ("privacy", "test"),
}
K = 3


def _attempt(rng: random.Random, case_id: str, attempt: int) -> GradedAttempt:
    suite, split = CASES[case_id]
    verdicts = tuple(
        Verdict(
            kind=kind,
            status=rng.choice(["pass", "pass", "fail", "error", "not_applicable"]),
            detail=f"label “goed” — {rng.random()}",
            weight=rng.choice([1.0, 2.0, 0.5]),
            gate=kind == "run.no_failure",
            version="1",
            judge_model="m" if kind == "rubric.judge" else None,
        )
        for kind in ("run.no_failure", "citations.required", "rubric.judge")
    )
    passed = rng.random() < 0.6
    return GradedAttempt(
        case_id=case_id,
        suite=suite,
        split=split,  # type: ignore[arg-type]
        attempt=attempt,
        score=rng.choice([None, 1.0, 2 / 3, 0.1 + 0.2]),
        passed=passed,
        verdicts=verdicts,
    )


def _run(runs: Path, run_id: str, seed: int) -> tuple[RunArchive, Path]:
    """A run whose one scoring holds graded attempts in a shuffled order, not yet aggregated."""
    archive = RunArchive(runs, run_id)
    manifest = build_manifest(
        run_id=run_id, project="p", suites=["kern", "privacy"], split=None, k=K, cases=[], shas={}
    )
    digests = {case_id: f"d-{case_id}" for case_id in CASES}
    archive.create(manifest.model_copy(update={"cases": digests}))
    with archive.evidence_writer() as writer:
        for case_id, (suite, split) in CASES.items():
            for n in range(K):
                writer.append(
                    Evidence(case_id=case_id, suite=suite, split=split, attempt=n)  # type: ignore[arg-type]
                )
    rng = random.Random(seed)
    graded = [_attempt(rng, case_id, n) for case_id in CASES for n in range(K)]
    rng.shuffle(graded)
    scoring = archive.new_scoring()
    lines = "".join(attempt.model_dump_json() + "\n" for attempt in graded)
    (scoring / VERDICTS).write_text(lines, encoding="utf-8")
    summary = GradingSummary(
        scoring=scoring.name,
        created_at=datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        attempts=len(graded),
        skipped=0,
        statuses={"pass": 1, "fail": 1, "error": 1, "not_applicable": 1},
        criterion_versions={"rubric.judge": "2"},
        prompts={"rubric.judge": "abc"},
        offline=False,
        judge=None,
    )
    write_json_atomically(scoring / SCORING, summary.model_dump(mode="json"))
    return archive, scoring


def _printed(report: Report) -> str:
    """What `soev-evals report RUN --json` prints for `report`."""
    return json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"


@pytest.fixture
def scored(tmp_path: Path) -> tuple[RunArchive, Path, Report]:
    """Run r2 aggregated, with r1 before it as the previous run."""
    first, first_scoring = _run(tmp_path, "r1", seed=1)
    aggregate(first, first_scoring)
    archive, scoring = _run(tmp_path, "r2", seed=2)
    built = aggregate(archive, scoring)
    assert built.previous is not None and built.cases
    return archive, scoring, built


def test_the_report_read_back_prints_as_the_report_built(
    scored: tuple[RunArchive, Path, Report],
) -> None:
    archive, _, built = scored
    read = read_report(archive)
    assert read == built
    assert _printed(read) == _printed(built)
    assert [case.case_id for case in read.cases] == ["kern-001", "kern-002", "priv-001"]
    assert [attempt.attempt for attempt in read.cases[0].attempts] == list(range(K))


def test_report_json_holds_no_verdict(scored: tuple[RunArchive, Path, Report]) -> None:
    _, scoring, built = scored
    stored = json.loads((scoring / REPORT).read_text(encoding="utf-8"))
    assert "cases" not in stored
    assert "verdicts" not in (scoring / REPORT).read_text(encoding="utf-8")
    full = built.model_dump(mode="json")
    del full["cases"]
    assert stored == full
    assert (scoring / REPORT).stat().st_size < (scoring / VERDICTS).stat().st_size


def test_a_report_json_with_its_case_list_still_reads(
    scored: tuple[RunArchive, Path, Report],
) -> None:
    archive, scoring, built = scored
    write_json_atomically(scoring / REPORT, built.model_dump(mode="json"))
    (scoring / VERDICTS).write_text("not read\n", encoding="utf-8")
    assert _printed(read_report(archive)) == _printed(built)


def test_a_damaged_verdicts_line_is_named(scored: tuple[RunArchive, Path, Report]) -> None:
    archive, scoring, _ = scored
    lines = (scoring / VERDICTS).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3][:20] + "\n"
    (scoring / VERDICTS).write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ProjectError, match=r"verdicts.jsonl: line 4: not a graded attempt"):
        read_report(archive)


def test_a_report_json_that_is_not_json_is_named(scored: tuple[RunArchive, Path, Report]) -> None:
    archive, scoring, _ = scored
    (scoring / REPORT).write_text("{not json", encoding="utf-8")
    with pytest.raises(ProjectError, match=r"report.json: not a valid report .*rescore r2"):
        read_report(archive)


def test_the_report_streamed_case_by_case_prints_as_json_dumps_does(
    scored: tuple[RunArchive, Path, Report],
) -> None:
    from soev_pipeline.cli.render import write_report_json

    _, _, built = scored
    assert built.cases and built.previous is not None
    for report in (
        built,
        built.model_copy(update={"cases": ()}),
        built.model_copy(update={"cases": built.cases[:1], "previous": None}),
    ):
        out = io.StringIO()
        write_report_json(report, out)
        assert out.getvalue() == _printed(report)


def _turn(failure: str | None, status: int | None = None, seconds: float = 2.0) -> Turn:
    return Turn(
        input="Vraag?",
        reply=None if failure else "Antwoord.",
        duration_s=seconds,
        failure=Failure(code=failure, http_status=status) if failure else None,
    )


def _graded(case_id: str, split: str, attempt: int, passed: bool) -> GradedAttempt:
    verdict = Verdict(kind="run.no_failure", status="pass" if passed else "fail", gate=True)
    return GradedAttempt(
        case_id=case_id,
        suite="kern",
        split=split,  # type: ignore[arg-type]
        attempt=attempt,
        score=1.0 if passed else 0.0,
        passed=passed,
        verdicts=(verdict,),
    )


def test_attempts_that_did_not_run_count_as_failed_and_are_listed(tmp_path: Path) -> None:
    # k = 2: a ran twice (pass, fail); b's attempt 0 could not connect (and was graded as a
    # pass all the same), its attempt 1 was interrupted; t (test) got a 503 named
    # `service_unavailable`, then passed.
    archive = RunArchive(tmp_path, "r1")
    manifest = build_manifest(
        run_id="r1", project="p", suites=["kern"], split=None, k=2, cases=[], shas={}
    )
    archive.create(manifest.model_copy(update={"cases": {"a": "da", "b": "db", "t": "dt"}}))
    with archive.evidence_writer() as writer:
        for case_id, split, attempt, turn in [
            ("a", "dev", 0, _turn(None)),
            ("a", "dev", 1, _turn(None, seconds=3.25)),
            ("b", "dev", 0, _turn("connect_error", seconds=0.5)),
            ("t", "test", 0, _turn("service_unavailable", 503)),
            ("t", "test", 1, _turn(None)),
        ]:
            writer.append(
                Evidence(
                    case_id=case_id,
                    suite="kern",
                    split=split,  # type: ignore[arg-type]
                    attempt=attempt,
                    turns=(turn,),
                )
            )
    graded = [
        _graded("a", "dev", 0, True),
        _graded("a", "dev", 1, False),
        _graded("b", "dev", 0, True),
        _graded("t", "test", 0, False),
        _graded("t", "test", 1, True),
    ]
    scoring = archive.new_scoring()
    (scoring / VERDICTS).write_text("".join(g.model_dump_json() + "\n" for g in graded), "utf-8")
    summary = GradingSummary(
        scoring=scoring.name,
        created_at=datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        attempts=5,
        skipped=0,
        statuses={"pass": 3, "fail": 2, "error": 0, "not_applicable": 0},
        criterion_versions={},
        prompts={},
        offline=False,
        judge=None,
    )
    write_json_atomically(scoring / SCORING, summary.model_dump(mode="json"))
    built = aggregate(archive, scoring)

    overall = built.overall
    assert (overall.cases, overall.attempts, overall.passed_attempts) == (3, 6, 2)
    assert overall.unrun_attempts == 3
    assert overall.pass_rate == pytest.approx((1 / 2 + 0 + 1 / 2) / 3)
    assert built.splits["test"].unrun_attempts == 1 and built.splits["dev"].unrun_attempts == 2
    assert built.unrun.attempts == 3 and built.expected_attempts == 6 and built.inconclusive
    assert built.unrun.codes == {"connect_error": 1, "interrupted": 1, "service_unavailable": 1}
    b = next(case for case in built.cases if case.case_id == "b")
    assert b.pass_rate == 0.0 and not b.pass_at_k
    assert [(x.attempt, x.passed, x.unrun, len(x.verdicts)) for x in b.attempts] == [
        (0, False, "connect_error", 1),
        (1, False, "interrupted", 0),
    ]
    # read back from report.json, verdicts.jsonl and the evidence: the same report
    assert read_report(archive) == built

    from soev_pipeline.run.junit import junit_xml
    from soev_pipeline.run.run_attempts import read_attempts

    root = junit_xml(built, read_attempts(archive)).getroot()
    (suite,) = root.findall("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["a"].find("failure") is not None and cases["a"].get("time") == "5.250"
    error = cases["b"].find("error")
    assert error is not None and error.get("type") == "soev.unrun"
    assert "2 did not run (connect_error 1, interrupted 1)" in (error.get("message") or "")
    assert cases["test split"].find("error") is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "2")
    assert suite.get("time") == "9.750"
