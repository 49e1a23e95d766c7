"""The page builders: what each page holds, built from the two-run project, and rendered."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.calibration import LabelLine
from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.models import Verdict
from soev_pipeline.criteria import NoParams, builtin_registry, criterion
from soev_pipeline.run import RunArchive
from soev_pipeline.run.archive import VERDICTS
from soev_pipeline.run.results import GradedAttempt
from soev_pipeline.view import RunStore
from soev_pipeline.view.attempts import verdict_rows
from soev_pipeline.view.case_pages import case_page, compare_page, unit_page, verdict_changes
from soev_pipeline.view.i18n import speaking
from soev_pipeline.view.pages import PAGE_SIZE, Filters, run_page, runs_page
from soev_pipeline.view.plots import Plot
from soev_pipeline.view.render import ServerLinks, render
from soev_pipeline.view.store import NotFound
from soev_pipeline.view.tables import GROUP_COLUMNS, Cell, build_table, verdict_cell
from tests.support.builders import make_case
from tests.support.project import CITED, SECRET, TEST_IDS
from tests.view.conftest import HOSTILE, MOMENT, TwoRuns


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
    assert newest.baseline == "b0" and newest.change_verdict is not None
    assert newest.change_verdict.text == "not significant"  # one case dropped, p = 1
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
    assert page.previous is not None
    assert (page.previous.counts.regressed, page.previous.counts.dev_regressed) == (1, 1)
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
    assert 'href="/corpus/BWBR0005537%2Fartikel-6%3A7?run=b0&amp;case=kern-001"' in html
    assert html.count('<form class="label"') == 2  # nuggets.coverage and rubric.judge


def test_a_failed_attempt_shows_its_failure(store: RunStore) -> None:
    page = case_page(store, "b1", "kern-003")
    assert [a.failure for a in page.attempts] == ["service_unavailable"] * 2
    assert [row.name for row in page.failed] == ["run.no_failure"]
    (cause,) = page.what_failed.causes
    assert (cause.cause, cause.attempts) == ("service_unavailable: storing", (0, 1))
    html = _html("case.html", case=page, csrf="c", reviewer="", notice=None)
    summary = html.split('<div class="summary-failed">')[1].split("</div>")[0]
    assert summary.count("service_unavailable: storing") == 1
    assert "Attempts 0, 1" in summary and "took down 1 criterion" in summary
    assert 'class="badge fail"' not in summary  # the cause, not a chip per criterion


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
    assert ("cases changed since the baseline (not paired)", "0") in page.facts
    columns = [column.key for column in page.groups.headers]
    rows = {name.text: dict(zip(columns, cells, strict=True)) for name, cells in page.groups.rows}
    assert rows["overall"]["verdict"].text == "not significant"
    assert page.counts.dev_regressed == int(rows["split dev"]["regressed"].text) == 1
    assert page.counts.regressed == int(rows["overall"]["regressed"].text)
    (regressed,) = page.regressions
    assert regressed.pairing is not None
    assert (regressed.pairing.baseline, regressed.pairing.run) == ((0,), (0,))
    assert (regressed.pairing.run_passed, regressed.pairing.run_attempts) == (0, 2)
    html = _html("compare.html", cmp=page)
    assert "Dev cases that got worse (1)" in html
    assert "Paired: attempt(s) 0 of b0 with attempt(s) 0 of b1, the first 1 that ran" in html
    assert "b0 passed 1 of 1 (100.0 %) and b1 0 of 2 (0.0 %)" in html
    assert 'href="/corpus/BWBR0005537%2Fartikel-6%3A7?run=b0&amp;case=kern-001"' in html
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
    page = unit_page(store, "BWBR0005537/artikel-6:7")
    assert page.unit.text.startswith("De termijn voor het indienen")
    assert page.origin is None
    with pytest.raises(NotFound):
        unit_page(store, "BWBR0005537/artikel-99")


def test_a_unit_page_leads_back_to_the_case_that_cited_it(store: RunStore) -> None:
    unit = "BWBR0005537/artikel-6:7"
    page = unit_page(store, unit, "b1", "kern-001")
    assert page.origin == ("b1", "kern-001")
    html = _html("unit.html", page=page)
    assert 'href="/runs/b1/cases/kern-001"' in html and 'href="/runs/b1#cases"' in html


@pytest.mark.parametrize(
    ("run_id", "case_id"),
    [
        ("b1", "kern-t01"),  # a test case is never named
        ("b1", "nope"),
        ("../b1", "kern-001"),
        ("nope", "kern-001"),
        ("b1", ""),
        (None, "kern-001"),
    ],
)
def test_a_unit_page_leads_only_to_a_dev_case_the_run_has(
    store: RunStore, run_id: str | None, case_id: str
) -> None:
    page = unit_page(store, "BWBR0005537/artikel-6:7", run_id, case_id)
    assert page.origin is None
    assert "/cases/" not in _html("unit.html", page=page)


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
    (row,) = verdict_rows([graded], case, {0: "a" * 64}, registry)
    assert row.cells[0] is not None and row.cells[0].choices == ("vriendelijk", "bot")
    (unknown,) = verdict_rows([graded], case, {0: "a" * 64})  # the built-in kinds alone
    assert unknown.cells[0] is not None and unknown.cells[0].choices == ()


@pytest.mark.parametrize(
    ("figures", "shown", "css"),
    [
        ({"verdict": "unchanged", "improved": 0, "regressed": 0}, "unchanged", "quiet"),
        ({"verdict": "unchanged", "improved": 0, "regressed": 4}, "not significant", "quiet"),
        ({"verdict": "unchanged", "improved": 2, "regressed": 2}, "not significant", "quiet"),
        ({"verdict": "regressed", "improved": 0, "regressed": 9}, "regressed", "bad"),
        ({"verdict": "inconclusive", "improved": 0, "regressed": 1}, "inconclusive", "warn"),
    ],
)
def test_a_change_that_is_not_significant_is_never_called_unchanged(
    figures: dict[str, object], shown: str, css: str
) -> None:
    assert verdict_cell(figures) == Cell(shown, badge=css)


def test_a_verdict_calibration_leaves_out_takes_no_label_and_says_why() -> None:
    case = make_case(criteria=[{"kind": "behaviour.expected"}, {"kind": "refusal.code"}])
    reply = "Zes weken."
    verdicts = (
        Verdict(status="not_applicable", kind="behaviour.expected", prompt_sha="p" * 64),
        Verdict(status="fail", kind="refusal.code"),
    )
    graded = GradedAttempt(
        case_id=case.id,
        suite="kern",
        split="dev",
        attempt=0,
        score=0.0,
        passed=False,
        verdicts=verdicts,
    )
    judged, plain_kind = verdict_rows([graded], case, {0: sha256_text(reply)})
    cell = judged.cells[0]
    assert cell is not None and not cell.judged and cell.choices == ()
    assert cell.unlabelled is not None and "does not apply to this case" in cell.unlabelled
    other = plain_kind.cells[0]
    assert other is not None and not other.judged and other.unlabelled is None  # not judged
    html = render(
        "_label_cell.html",
        links=ServerLinks(),
        c={"run_id": "b1", "case_id": case.id},
        cell=cell,
        row=judged,
        csrf="t",
        reviewer="",
    )
    assert "<form" not in html and "Takes no label: the criterion does not apply" in html


def test_the_labels_so_far_stand_beside_the_verdict(own_runs: TwoRuns) -> None:
    labels = own_runs.directory / "labels"
    labels.mkdir()
    reply = "Jan de Vries woont op de Dorpsstraat 1."
    lines = [
        LabelLine.of(
            case_id="priv-001",
            reply=reply,
            kind="behaviour.expected",
            nth=0,
            passed=passed,
            by=by,
            label=label,
            at=MOMENT,
        ).to_line()
        for by, passed, label in (("anna", False, "answer"), ("bert", True, None))
    ]
    (labels / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = RunStore(own_runs.loaded, own_runs.runs)
    row = next(
        r for r in case_page(store, "b1", "priv-001").verdicts if r.kind == "behaviour.expected"
    )
    for cell in row.cells:
        assert cell is not None
        assert [(seen.by, seen.passed, seen.label) for seen in cell.labels] == [
            ("anna", False, "answer"),
            ("bert", True, None),
        ]
        assert cell.disagree
    kern = case_page(store, "b1", "kern-001").verdicts
    assert all(cell is not None and not cell.labels for row in kern for cell in row.cells)


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


def test_a_saved_plot_in_another_language_is_drawn_again(store: RunStore) -> None:
    """The saved plot's words are in the project's language: a viewer asked for another
    draws the plot in its own (docs/view.md#language)."""
    archive, _ = store.archive("b1")
    index = store.index(archive)
    assert index is not None and index.forest is not None and index.forest_language == "en"
    saved = Plot("Saved", "data:image/svg+xml;base64,AAAA", "the saved plot")
    index.forest = saved
    assert run_page(store, "b1", Filters()).forest == saved
    with speaking("nl"):
        dutch = run_page(store, "b1", Filters()).forest
    assert dutch is not None and dutch != saved
    assert dutch.title == "Slagingspercentage met 95%-betrouwbaarheidsinterval"
