"""The index of a scoring: dev cases only, their figures and offsets, the filters, the search."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.archive import VERDICTS
from soev_pipeline.view.index import RunIndex
from soev_pipeline.view.saved_index import INDEX, load_index, open_index
from tests.support.project import SECRET
from tests.view.conftest import TwoRuns


def _index(run: TwoRuns, run_id: str = "b1") -> RunIndex:
    archive = run.b1 if run_id == "b1" else run.b0
    report = archive.latest_report_path()
    assert report is not None
    return RunIndex.build(report.parent / VERDICTS, archive.evidence_path)


def test_the_index_holds_the_dev_cases_alone_with_their_figures(two_runs: TwoRuns) -> None:
    index = _index(two_runs)
    assert sorted(index.cases) == ["kern-001", "kern-002", "kern-003", "priv-001"]
    kern = index.cases["kern-001"]
    assert (kern.suite, kern.attempts, kern.passed) == ("kern", 2, 0)
    assert kern.failing["citations.required"] == 2
    assert ("citations.required", "fail") in kern.statuses
    assert sorted(kern.verdict_at) == sorted(kern.evidence_at) == [0, 1]
    assert all(SECRET not in entry.search for entry in index.cases.values())


def test_offsets_lead_to_the_attempts_of_the_case(two_runs: TwoRuns) -> None:
    index = _index(two_runs)
    graded = index.graded("priv-001")
    evidence = index.evidence("priv-001")
    assert [g.attempt for g in graded] == [0, 1] == sorted(evidence)
    assert {g.case_id for g in graded} == {e.case_id for e in evidence.values()} == {"priv-001"}
    assert index.graded("kern-t01") == [] and index.evidence("kern-t01") == {}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["kern-001", "kern-003", "priv-001", "kern-002"]),
        ({"suite": "privacy"}, ["priv-001"]),
        ({"status": "passed"}, ["kern-002"]),
        ({"status": "failed", "suite": "kern"}, ["kern-001", "kern-003"]),
        ({"status": "fail", "criterion": "rubric.judge"}, ["kern-001"]),
        ({"status": "error"}, []),
        ({"status": "failed", "criterion": "behaviour.expected"}, ["priv-001"]),
        ({"criterion": "usage.max_tokens"}, ["kern-002"]),
        ({"query": "DORPSSTRAAT"}, ["priv-001"]),
        ({"query": "onerror bezwaar"}, ["kern-001"]),
        ({"query": "storing"}, ["kern-003"]),
        ({"query": "artikel-6:7/lid-1"}, ["kern-002"]),  # a cited source
        ({"query": "source groups"}, []),  # verdict details are not searched
        ({"query": SECRET}, []),
        ({"query": "kern-t01"}, []),
    ],
)
def test_select_filters_and_searches(
    two_runs: TwoRuns, filters: dict[str, str], expected: list[str]
) -> None:
    chosen = _index(two_runs).select(**filters, suite_order=("kern", "privacy"))  # type: ignore[arg-type]
    assert [entry.case_id for entry in chosen] == expected


def test_hidden_cases_are_left_out(two_runs: TwoRuns) -> None:
    archive = two_runs.b1
    report = archive.latest_report_path()
    assert report is not None
    index = RunIndex.build(report.parent / VERDICTS, archive.evidence_path, frozenset({"kern-001"}))
    assert "kern-001" not in index.cases


def _copy(two_runs: TwoRuns, tmp_path: Path) -> tuple[Path, Path]:
    report = two_runs.b1.latest_report_path()
    assert report is not None
    verdicts, evidence = tmp_path / VERDICTS, tmp_path / "evidence.jsonl"
    verdicts.write_bytes((report.parent / VERDICTS).read_bytes())
    evidence.write_bytes(two_runs.b1.evidence_path.read_bytes())
    return verdicts, evidence


def test_an_attempt_graded_twice_counts_once_the_first(two_runs: TwoRuns, tmp_path: Path) -> None:
    verdicts, evidence = _copy(two_runs, tmp_path)
    first = next(
        line for line in verdicts.read_text().splitlines() if '"case_id":"kern-002"' in line
    )
    changed = json.loads(first) | {"passed": False}
    with verdicts.open("a") as out:
        out.write(json.dumps(changed) + "\n")
    entry = RunIndex.build(verdicts, evidence).cases["kern-002"]
    assert (entry.attempts, entry.passed) == (2, 2)


def test_a_cut_last_evidence_line_is_passed_over(two_runs: TwoRuns, tmp_path: Path) -> None:
    verdicts, evidence = _copy(two_runs, tmp_path)
    with evidence.open("ab") as out:
        out.write(b'{"case_id": "kern-002", "attempt": 7, "rep')
    assert "kern-002" in RunIndex.build(verdicts, evidence).cases


def test_a_broken_verdicts_line_is_an_error_naming_it(two_runs: TwoRuns, tmp_path: Path) -> None:
    verdicts, evidence = _copy(two_runs, tmp_path)
    lines = verdicts.read_text().splitlines()
    lines[2] = '{"case_id": "kern-002"}'
    verdicts.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProjectError, match=rf"{VERDICTS}: line 3: not a graded attempt"):
        RunIndex.build(verdicts, evidence)


def test_lines_in_another_layout_read_the_same(two_runs: TwoRuns, tmp_path: Path) -> None:
    """The index reads the layout `GradedAttempt` writes without decoding the details; any
    other JSON of the same data (spaces, other key order, escapes) reads the same."""
    verdicts, evidence = _copy(two_runs, tmp_path)
    before = RunIndex.build(verdicts, evidence)
    for path in (verdicts, evidence):
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_text(
            "".join(json.dumps(json.loads(line), sort_keys=True) + "\n" for line in lines),
            encoding="utf-8",
        )
    after = RunIndex.build(verdicts, evidence)
    assert set(after.cases) == set(before.cases)
    for case_id, entry in before.cases.items():
        other = after.cases[case_id]
        assert (other.attempts, other.passed, other.statuses, other.failing) == (
            entry.attempts,
            entry.passed,
            entry.statuses,
            entry.failing,
        )
        assert sorted(other.evidence_at) == sorted(entry.evidence_at)
    assert [e.case_id for e in after.select(query="dorpsstraat")] == ["priv-001"]


# The index saved beside the report (docs/view.md#large-runs)


def _scoring(run: TwoRuns, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of run b1's latest scoring folder (with its saved index) and its evidence."""
    report = run.b1.latest_report_path()
    assert report is not None and (report.parent / INDEX).exists()
    scoring = tmp_path / "0001"
    shutil.copytree(report.parent, scoring)
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_bytes(run.b1.evidence_path.read_bytes())
    return scoring, evidence


def _same(a: RunIndex, b: RunIndex) -> None:
    assert list(a.cases) == list(b.cases)
    for case_id, entry in a.cases.items():
        other = b.cases[case_id]
        assert (other.suite, other.attempts, other.passed, other.score_sum, other.scored) == (
            entry.suite,
            entry.attempts,
            entry.passed,
            entry.score_sum,
            entry.scored,
        )
        assert (other.statuses, other.failing) == (entry.statuses, entry.failing)
        assert (other.verdict_at, other.evidence_at) == (entry.verdict_at, entry.evidence_at)


def test_the_saved_index_opens_as_built_without_reading_the_evidence(
    two_runs: TwoRuns, tmp_path: Path
) -> None:
    scoring, evidence = _scoring(two_runs, tmp_path)
    refreshed: list[int] = []
    opened = open_index(scoring, evidence, refresh=lambda: refreshed.append(1))
    assert refreshed == [] and opened.forest is not None and opened.forest.uri.startswith("data:")
    _same(RunIndex.build(scoring / VERDICTS, evidence), opened)
    assert opened.evidence("priv-001")[0].reply is not None
    assert refreshed == [1]  # brought up to date when an attempt is first shown
    hidden = open_index(scoring, evidence, frozenset({"kern-001"}))
    assert "kern-001" not in hidden.cases and "kern-002" in hidden.cases


@pytest.mark.parametrize(
    "change",
    ["verdicts grew", "another report", "another format", "not json", "a field missing"],
)
def test_a_saved_index_that_does_not_fit_is_built_again(
    two_runs: TwoRuns, tmp_path: Path, change: str
) -> None:
    scoring, evidence = _scoring(two_runs, tmp_path)
    saved = json.loads((scoring / INDEX).read_text())
    if change == "verdicts grew":
        line = (scoring / VERDICTS).read_text().splitlines()[0]
        raw = json.loads(line) | {"case_id": "kern-new", "passed": False}
        with (scoring / VERDICTS).open("a") as out:
            out.write(json.dumps(raw) + "\n")
    elif change == "another report":
        report = json.loads((scoring / "report.json").read_text())
        (scoring / "report.json").write_text(json.dumps(report, indent=1))
    elif change == "another format":
        (scoring / INDEX).write_text(json.dumps(saved | {"soev_index": 0}))
    elif change == "not json":
        (scoring / INDEX).write_text('{"soev_index": 1, "cas')
    else:
        del saved["cases"][0][9]
        (scoring / INDEX).write_text(json.dumps(saved))
    assert load_index(scoring, evidence) is None
    opened = open_index(scoring, evidence)
    assert opened.forest is None  # built from the files: the page draws its plot
    _same(RunIndex.build(scoring / VERDICTS, evidence), opened)
    assert ("kern-new" in opened.cases) == (change == "verdicts grew")


def test_evidence_appended_after_the_index_was_saved_is_read(
    two_runs: TwoRuns, tmp_path: Path
) -> None:
    """A resume appends lines after the scoring: the last line of an attempt counts, as
    when the index is built from the files."""
    scoring, evidence = _scoring(two_runs, tmp_path)
    opened = open_index(scoring, evidence)
    again = opened.evidence("kern-002")[0].model_copy(update={"reply": "Opnieuw gevraagd."})
    with evidence.open("a") as out:
        out.write(again.model_dump_json() + "\n")
    assert opened.evidence("kern-002")[0].reply == "Opnieuw gevraagd."
    assert RunIndex.build(scoring / VERDICTS, evidence).cases["kern-002"].evidence_at == (
        opened.cases["kern-002"].evidence_at
    )


def test_offsets_that_do_not_point_at_the_attempt_are_read_again(
    two_runs: TwoRuns, tmp_path: Path
) -> None:
    """Evidence of the same size in another order (an object store's attempts compacted in
    another order): the index finds each attempt's line again before showing it."""
    scoring, evidence = _scoring(two_runs, tmp_path)
    lines = evidence.read_bytes().splitlines(keepends=True)
    evidence.write_bytes(b"".join(reversed(lines)))
    opened = open_index(scoring, evidence)
    for case_id in opened.cases:
        shown = opened.evidence(case_id)
        assert shown and all(e.case_id == case_id and e.attempt == n for n, e in shown.items())


def test_verdict_offsets_of_other_lines_are_read_again(two_runs: TwoRuns, tmp_path: Path) -> None:
    """A saved index whose verdict offsets point at other lines (or into a line) fits the
    file's size and report, yet each case still shows its own verdicts."""
    scoring, evidence = _scoring(two_runs, tmp_path)
    saved = json.loads((scoring / INDEX).read_text())
    rows = saved["cases"]
    rows[0][8], rows[1][8] = rows[1][8], rows[0][8]
    rows[2][8] = [number + 3 if place % 2 else number for place, number in enumerate(rows[2][8])]
    (scoring / INDEX).write_text(json.dumps(saved))
    opened = open_index(scoring, evidence)
    assert opened.forest is not None  # the saved index was taken
    for case_id, entry in opened.cases.items():
        assert [(g.case_id, g.attempt) for g in opened.graded(case_id)] == [
            (case_id, n) for n in range(entry.attempts)
        ]


@pytest.mark.parametrize("grown", [False, True])
def test_verdicts_still_in_the_archive_are_fetched_and_checked_when_first_read(
    two_runs: TwoRuns, tmp_path: Path, grown: bool
) -> None:
    """An object store's viewer opens the saved index without the verdicts and fetches them
    in the background once the first page is sent (`prefetch`), never while it is made;
    verdicts that do not fit the saved index are read whole."""
    scoring, evidence = _scoring(two_runs, tmp_path)
    kept = (scoring / VERDICTS).read_text()
    if grown:
        raw = json.loads(kept.splitlines()[0]) | {"case_id": "kern-new", "passed": False}
        kept += json.dumps(raw) + "\n"
    (scoring / VERDICTS).unlink()
    arrived = threading.Event()

    def fetch() -> None:
        if not (scoring / VERDICTS).exists():
            (scoring / VERDICTS).write_text(kept)
        arrived.set()

    opened = open_index(scoring, evidence, fetch=fetch)
    assert "kern-new" not in opened.cases  # the saved index, taken without the verdicts
    assert not arrived.is_set()  # nothing fetched while the first page is made
    opened.prefetch()
    assert arrived.wait(30)  # fetched in the background, no page asked
    assert [g.attempt for g in opened.graded("kern-002")] == [0, 1]
    assert ("kern-new" in opened.cases) == grown
    assert opened.evidence("kern-002")[1].attempt == 1
