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
