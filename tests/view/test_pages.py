"""The page builders: what each page holds, built from the two-run project, and rendered."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.core.models import Verdict
from soev_pipeline.criteria import NoParams, builtin_registry, criterion
from soev_pipeline.run import RunArchive
from soev_pipeline.run.archive import VERDICTS
from soev_pipeline.run.results import GradedAttempt
from soev_pipeline.view import RunStore
from soev_pipeline.view.attempts import verdict_rows
from soev_pipeline.view.case_pages import case_page, compare_page, unit_page, verdict_changes
from soev_pipeline.view.pages import PAGE_SIZE, Filters, run_page, runs_page
from soev_pipeline.view.plots import Plot
from soev_pipeline.view.render import ServerLinks, render
from soev_pipeline.view.store import NotFound
from soev_pipeline.view.tables import GROUP_COLUMNS, build_table
from tests.support.builders import make_case
from tests.support.project import CITED, SECRET, TEST_IDS
from tests.view.conftest import HOSTILE, TwoRuns


@pytest.fixture
def store(two_runs: TwoRuns) -> RunStore:
    return RunStore(two_runs.loaded, two_runs.runs)


def _html(template: str, **context: object) -> str:
    html = render(template, links=ServerLinks(), project="wetwijzer", **context)
    assert SECRET not in html
    assert not any(case_id in html for case_id in TEST_IDS)
    return html


def test_the_runs_page_lists_runs_newest_first_with_plots(store: RunStore) -> None:
    page = runs_page(store)
    assert [run.run_id for run in page.runs] == ["b1", "b0"]
    newest = page.runs[0]
    assert (newest.k, newest.cases, newest.attempts) == (2, 6, 12)
    assert newest.pass_rate.startswith("50.0 % [")
    assert (newest.baseline, newest.change_verdict) == ("b0", "unchanged")
    assert [plot.title for plot in page.plots] == [
        "Overall pass rate",
        "Suite kern",
        "Suite privacy",
    ]
    assert all(plot.uri.startswith("data:image/svg+xml;base64,") for plot in page.plots)
    assert "95 % interval" in page.plots[0].alt
    html = _html("runs.html", page=page)
    assert 'href="/runs/b1"' in html and '<img src="data:image/svg+xml;base64,' in html


def test_the_run_page_has_the_tables_with_intervals_and_a_page_of_cases(store: RunStore) -> None:
    page = run_page(store, "b1", Filters())
    assert page.groups is not None and page.criteria is not None
    names = [name.text for name, _ in page.groups.rows]
    assert names == ["overall", "split dev", "split test", "suite kern", "suite privacy"]
    overall = dict(zip([c.key for c in page.groups.headers], page.groups.rows[0][1], strict=True))
    assert re.fullmatch(r"50\.0 % \[\d+\.\d–\d+\.\d\]", overall["pass_rate"].text)
    assert page.forest is not None and page.forest.uri.startswith("data:image/svg+xml")
    criteria = {name.text: cells for name, cells in page.criteria.rows}
    assert "rubric.judge" in criteria
    assert page.previous is not None and page.previous.regressions == 1
    assert [case.case_id for case in page.cases] == ["kern-001", "kern-003", "priv-001", "kern-002"]
    assert (page.matched, page.dev_cases, page.pages) == (4, 4, 1)
    html = _html("run.html", page=page)
    assert 'href="/runs/b1/cases/kern-001"' in html
    assert 'href="/runs/b1/compare?baseline=previous"' in html


def test_filters_the_run_does_not_have_are_dropped(store: RunStore) -> None:
    page = run_page(
        store,
        "b1",
        Filters(suite="nope", status="weird", criterion="nope", query="  storing ", page=-3),
    )
    assert page.filters == Filters(query="storing", page=1)
    assert [case.case_id for case in page.cases] == ["kern-003"]


def test_cases_come_in_pages_of_fifty(two_runs: TwoRuns, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(two_runs.b1.path, runs / "big")
    manifest = json.loads((runs / "big" / "manifest.json").read_text())
    (runs / "big" / "manifest.json").write_text(json.dumps(manifest | {"run_id": "big"}))
    (scoring,) = RunArchive(runs, "big").scorings()
    graded = json.loads((scoring / VERDICTS).read_text().splitlines()[0])
    lines = [
        json.dumps(graded | {"case_id": f"x-{n:03d}", "split": "dev", "passed": n % 2 == 0})
        for n in range(120)
    ]
    (scoring / VERDICTS).write_text("\n".join(lines) + "\n")
    big = RunStore(two_runs.loaded, runs)
    first = run_page(big, "big", Filters())
    assert (first.matched, first.pages, len(first.cases)) == (120, 3, PAGE_SIZE)
    assert first.cases[0].case_id == "x-001"  # failed first, then by id
    last = run_page(big, "big", Filters(page=9))
    assert (last.filters.page, len(last.cases)) == (3, 20)
    html = _html("run.html", page=run_page(big, "big", Filters(status="failed", page=2)))
    assert "page 2 of 2" in html
    assert 'href="/runs/big?status=failed#cases"' in html  # back to page 1


def test_the_case_page_shows_questions_replies_citations_and_verdicts(store: RunStore) -> None:
    page = case_page(store, "b0", "kern-001")
    assert [q.shown for q in page.questions] == ["Binnen welke termijn moet ik bezwaar maken?"]
    (attempt,) = page.attempts
    assert attempt.passed is True and attempt.reply is not None
    assert attempt.reply.shown.startswith("De bezwaartermijn is zes weken")
    (citation,) = attempt.turns[-1].citations
    assert (citation.source, citation.unit) == (CITED, "BWBR0005537/artikel-6:7")
    assert attempt.turns[-1].tokens == "40 + 12"
    assert [variant.id for variant in attempt.variants] == ["kern-001-a"]
    expectation = page.expectation
    assert expectation is not None and not expectation.changed
    assert expectation.required[0][0].unit == "BWBR0005537/artikel-6:7"
    rows = {row.name: row for row in page.verdicts}
    assert rows["citations.required"].gate and rows["nuggets.coverage"].weight == 2
    rubric = rows["rubric.judge"].cells[0]
    assert rubric is not None and rubric.judged and rubric.choices == ("goed", "fout")
    assert rubric.judge == "judge-m"
    assert rows["citations.required"].cells[0] is not None
    assert not rows["citations.required"].cells[0].judged
    html = _html("case.html", case=page, csrf="c", reviewer="", notice=None)
    assert 'href="/corpus/BWBR0005537%2Fartikel-6%3A7"' in html
    assert html.count('<form class="label"') == 2  # nuggets.coverage and rubric.judge


def test_a_failed_attempt_shows_its_failure(store: RunStore) -> None:
    page = case_page(store, "b1", "kern-003")
    assert [a.failure for a in page.attempts] == ["service_unavailable"] * 2
    assert [row.name for row in page.failed] == ["run.no_failure"]


def test_a_hostile_reply_is_text_on_every_page(store: RunStore) -> None:
    page = case_page(store, "b1", "kern-001")
    assert page.attempts[0].reply is not None and page.attempts[0].reply.shown == HOSTILE
    html = _html("case.html", case=page, csrf="c", reviewer="", notice=None)
    assert "<script>document" not in html and "<img src=x" not in html
    assert "&lt;script&gt;document.title=" in html
    assert "{{ 7*7 }}" in html and ">49<" not in html
    compared = _html("compare.html", cmp=compare_page(store, "b1", "previous"))
    assert "<script>document" not in compared and "&lt;script&gt;" in compared


def test_a_test_case_is_never_found(store: RunStore) -> None:
    for case_id in TEST_IDS:
        with pytest.raises(NotFound) as raised:
            case_page(store, "b1", case_id)
        assert case_id not in str(raised.value)


def test_a_run_of_another_id_or_project_is_not_found(store: RunStore) -> None:
    for run_id in ("nope", "../b1", "B1"):
        with pytest.raises(NotFound):
            run_page(store, run_id, Filters())


def test_the_comparison_shows_the_table_then_the_regressed_cases(store: RunStore) -> None:
    page = compare_page(store, "b1", "previous")
    assert (page.run_id, page.baseline_id) == ("b1", "b0")
    assert [name.text for name, _ in page.groups.rows][:1] == ["overall"]
    assert ("changed cases", "0") in page.facts
    (regressed,) = page.regressions
    assert (regressed.case_id, regressed.baseline_pass_rate, regressed.pass_rate) == (
        "kern-001",
        "100.0 %",
        "0.0 %",
    )
    changed = {change.criterion: change for change in regressed.changes}
    assert changed["citations.required"].before == "pass ×1"
    assert changed["citations.required"].after == "fail ×2"
    assert "run.no_failure" not in changed  # passed in both: k differs, the share does not
    assert [a.attempt for a in regressed.before] == [0] and len(regressed.after) == 2
    assert regressed.after[0].reply is not None and regressed.after[0].reply.shown == HOSTILE
    assert page.improvements == ()
    assert compare_page(store, "b1", "b0").baseline_id == "b0"


def test_a_comparison_without_a_baseline_is_not_found(store: RunStore) -> None:
    with pytest.raises(NotFound, match="no earlier run"):
        compare_page(store, "b0", "previous")


def test_verdict_changes_name_criteria_one_run_lacks(store: RunStore) -> None:
    page = case_page(store, "b0", "kern-001")
    assert verdict_changes(page.verdicts, ())[0].after == "not graded"
    assert verdict_changes((), page.verdicts[:1])[0].before == "not graded"


def test_a_unit_page_shows_the_text_of_the_corpus(store: RunStore) -> None:
    unit = unit_page(store, "BWBR0005537/artikel-6:7")
    assert unit.text.startswith("De termijn voor het indienen")
    with pytest.raises(NotFound):
        unit_page(store, "BWBR0005537/artikel-99")


def test_a_figure_the_report_adds_later_shows_as_a_column_of_its_own() -> None:
    table = build_table(
        [("overall", {"cases": 3, "pass_rate": 0.5, "ci95": [0.2, 0.8], "unrun_attempts": 4})],
        GROUP_COLUMNS,
    )
    assert [column.key for column in table.headers][-1] == "unrun_attempts"
    assert table.rows[0][1][-1].text == "4"
    assert table.rows[0][1][2].text == "50.0 % [20.0–80.0]"


def test_a_run_whose_report_does_not_read_is_listed_with_the_reason(own_runs: TwoRuns) -> None:
    report = own_runs.b0.latest_report_path()
    assert report is not None
    report.write_text('{"run_id": 3}', encoding="utf-8")
    page = runs_page(RunStore(own_runs.loaded, own_runs.runs))
    broken = {run.run_id: run for run in page.runs}["b0"]
    assert broken.pass_rate == "unreadable"
    assert broken.problem is not None and "report.json: not a valid report" in broken.problem
    assert page.plots[0].alt.startswith("Overall pass rate over 1 run(s)")  # b1 alone


def test_a_kind_of_the_project_offers_its_own_labels() -> None:
    """A hooks kind's judge labels come from the kind, as the built-in kinds' do."""

    @criterion("custom.toon", NoParams, needs=("judge",), labels=("vriendelijk", "bot"))
    async def toon(case: Any, evidence: Any, *, params: NoParams, ctx: Any) -> Verdict:
        raise NotImplementedError

    registry = builtin_registry()
    registry.register(toon)
    case = make_case(criteria=[{"kind": "custom.toon"}])
    verdict = Verdict(status="pass", kind="custom.toon", prompt_sha="p" * 64)
    graded = GradedAttempt(
        case_id=case.id,
        suite="kern",
        split="dev",
        attempt=0,
        score=1.0,
        passed=True,
        verdicts=(verdict,),
    )
    (row,) = verdict_rows([graded], case, {0: True}, registry)
    assert row.cells[0] is not None and row.cells[0].choices == ("vriendelijk", "bot")
    (unknown,) = verdict_rows([graded], case, {0: True})  # the built-in kinds alone
    assert unknown.cells[0] is not None and unknown.cells[0].choices == ()


def test_the_run_page_takes_its_plot_from_the_saved_index(store: RunStore) -> None:
    """The aggregate step drew the plot into index.json: a fresh viewer does not draw it
    again (docs/view.md#large-runs); without a saved plot the page draws its own."""
    archive, _ = store.archive("b1")
    index = store.index(archive)
    assert index is not None and index.forest is not None
    drawn = run_page(store, "b1", Filters()).forest
    assert drawn == index.forest
    index.forest = Plot("Saved", "data:image/svg+xml;base64,AAAA", "the saved plot")
    assert run_page(store, "b1", Filters()).forest == index.forest
    index.forest = None
    again = run_page(store, "b1", Filters()).forest
    assert again is not None and drawn is not None
    assert (again.title, again.alt) == (drawn.title, drawn.alt)
    assert again.uri.startswith("data:image/svg+xml;base64,") and again.uri != "AAAA"
