"""`report RUN --html FILE`: the run page, its comparison and its failing dev cases in one file.

The file is for CI artifacts and mail: its stylesheet is inline (allowed by its hash in the
file's own Content-Security-Policy), its plots are `data:` images, it has no script and
fetches nothing. Its links are anchors to the sections it holds. It is written whole to a
temporary file and renamed, so a reader never sees half of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from markupsafe import Markup

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.outputs import Owned, replace_file
from soev_pipeline.corpus import CorpusUnit
from soev_pipeline.project import LoadedProject
from soev_pipeline.run.archive import REPORT, VERDICTS, RunArchive, naming
from soev_pipeline.run.results import Comparison
from soev_pipeline.run.run_attempts import RunAttempts

from .attempts import AttemptView
from .case_pages import CasePage, ComparePage, case_page, compare_page
from .i18n import DEFAULT_LANGUAGE, Language, speaking
from .index import RunIndex
from .pages import Filters, case_row, run_forest, run_page, when
from .render import FileLinks, environment, file_csp, render, stylesheet
from .saved_index import INDEX, save_index
from .store import NotFound, RunStore, report_of

HTML_REPORT = "report.html"
"""The name of the HTML report that every run's aggregate step writes beside report.json."""
MAX_ATTEMPTS_WRITTEN = 2000
"""Failing dev cases are read for the file until their attempts reach this count."""
CASE_BYTES = 3_000_000
"""The failing dev cases are written out, the lowest pass rate first, until their pages
reach this size; the rest are listed with what failed them, and the viewer shows them. So
the file of a large run stays small enough to mail (under 5 MB: bench/view.py)."""
UNIT_CHARS = 800_000
"""The texts of the cited corpus units go in, in the order they are first cited, up to
this many characters; a citation of a unit beyond it shows its id without a link."""


def _cited(attempts: Iterable[AttemptView]) -> Iterator[str]:
    for attempt in attempts:
        for turn in (*attempt.turns, *(t for v in attempt.variants for t in v.turns)):
            yield from (c.unit for c in turn.citations if c.unit)


def _units(
    store: RunStore, cases: list[CasePage], comparison: ComparePage | None
) -> list[CorpusUnit]:
    """The corpus units that the cases expect and cite, case by case in their order, then
    those of the comparison's replies; each once, where it is first met."""
    wanted: dict[str, None] = {}
    for case in cases:
        if case.expectation is not None:
            expected = case.expectation
            sources = [*(s for group in expected.required for s in group), *expected.forbidden]
            wanted.update((s.unit, None) for s in sources if s.unit)
        wanted.update((unit, None) for unit in _cited(case.attempts))
    if comparison is not None:
        changed = (a for r in comparison.regressions for a in (*r.before, *r.after))
        wanted.update((unit, None) for unit in _cited(changed))
    corpus = store.corpus
    found = (corpus.get(unit) for unit in wanted) if corpus is not None else ()
    return [unit for unit in found if unit is not None]


def _within(units: list[CorpusUnit], budget: int) -> list[CorpusUnit]:
    kept, total = [], 0
    for unit in units:
        total += len(unit.text)
        if total > budget:
            break
        kept.append(unit)
    return kept


def warm() -> None:
    """Do what the first report of a process does once, ahead of it: compile the report's
    templates. `soev-evals run` calls this on a thread while its attempts run, so that its
    report costs less after the last attempt."""
    for template in ("report.html", "_case_body.html", "_compare_body.html", "_run_body.html"):
        environment().get_template(template)


def render_html_report(store: RunStore, run_id: str) -> str:
    """The HTML report of a run, as text.

    Raises:
        NotFound: the project has no run `run_id`.
        ProjectError: the run has not been graded, or its files do not read.
    """
    archive, manifest = store.archive(run_id)
    page = run_page(store, run_id, Filters())
    index = store.index(archive)
    if index is None:
        raise ProjectError(f"{archive.location}: run {run_id!r} has no scoring yet")
    failing = index.select(status="failed", suite_order=manifest.suites)
    read: list[CasePage] = []
    attempts = 0
    for entry in failing:
        if attempts + entry.attempts > MAX_ATTEMPTS_WRITTEN and read:
            break
        read.append(case_page(store, run_id, entry.case_id))
        attempts += entry.attempts
    comparison: ComparePage | None = None
    problem = None
    try:
        comparison = compare_page(store, run_id, "previous")
    except (NotFound, ProjectError) as exc:
        problem = str(exc)
    units = _within(_units(store, read, comparison), UNIT_CHARS)
    links = FileLinks(units={unit.id for unit in units})
    sections: list[Markup] = []
    size = 0
    for case in read:
        section = Markup(render("_case_body.html", case=case, links=links, anchored=True))
        size += len(section)
        if size > CASE_BYTES and sections:
            break
        sections.append(section)
    links.cases = {case.case_id for case in read[: len(sections)]}
    links.comparison = comparison is not None
    return render(
        "report.html",
        links=links,
        project=store.project,
        csp=file_csp(),
        css=Markup(stylesheet()),  # the package's own file: its CSP hash is of this text
        page=page,
        cmp=comparison,
        comparison_problem=problem,
        failing=[case_row(entry) for entry in failing],
        sections=sections,
        left_out=len(failing) - len(sections),
        units=units,
        written=when(datetime.now(UTC)),
    )


def write_html_report(
    loaded: LoadedProject,
    archive: RunArchive,
    path: Path,
    *,
    owned: Iterable[Owned] = (),
    language: Language | None = None,
    store: RunStore | None = None,
) -> Path:
    """Write the HTML report of `archive`'s run of `loaded` to `path`; return the path.

    This is what `soev-evals report RUN --html FILE` and the `report` asset call; the
    former passes the project's `owned` paths, which the file may not be nor lie in, and
    neither may write through a link at `path` (see `replace_file`). The file is in
    `language`, else the project's `language`, else English. `store` is the runs of the
    project as read so far, if the caller has them.

    Raises:
        ProjectError: the run does not exist, belongs to another project or has no scoring;
            `path` is not a regular file (a folder, a device, a link), is owned, or its
            folder cannot be made.
        OSError: the file cannot be written.
    """
    store = store or RunStore(loaded, archive.runs_dir)
    try:
        with speaking(language or loaded.project.language or DEFAULT_LANGUAGE):
            text = render_html_report(store, archive.run_id)
    except NotFound as exc:
        raise ProjectError(f"{archive.runs_dir}: {exc}") from None
    path = path.absolute()
    with naming(path):
        return replace_file(
            path,
            lambda temporary: temporary.write_text(text, encoding="utf-8"),
            option="--html",
            owned=owned,
        )


def write_scoring_pages(
    loaded: LoadedProject,
    archive: RunArchive,
    scoring: Path,
    *,
    known: Iterable[RunAttempts] = (),
    comparison: Comparison | None = None,
) -> tuple[str, ...]:
    """Write what a viewer reads of a new scoring besides its report: the saved index of
    its dev cases with the run page's plot (`saved_index.save_index`), and then its HTML
    report, drawn from that index. Return their names, for `RunArchive.commit`.

    This is what the aggregate step of every run and rescore calls (`api.execute`), after
    `report.json`: so a viewer's first page of a large run reads neither its verdicts nor
    its evidence, and the report and the viewer share one index. `known` and `comparison`
    are what the aggregate step made (the attempts of the run and of its previous run, the
    report's comparison): the HTML report takes them as read (`RunStore.remember`).

    Raises:
        ProjectError: the scoring's verdicts or report do not read.
        OSError: a file cannot be written.
    """
    index = RunIndex.build(scoring / VERDICTS, archive.evidence_path, refresh=archive.evidence_file)
    language = loaded.project.language or DEFAULT_LANGUAGE
    with speaking(language):
        index.forest = run_forest(report_of(scoring / REPORT))
    index.forest_language = language
    save_index(index, scoring)
    store = RunStore(loaded, archive.runs_dir)
    store.remember(known, comparison)
    write_html_report(loaded, archive, scoring / HTML_REPORT, store=store)
    return (INDEX, HTML_REPORT)
