"""The page builders of the runs list and of a run: plain data that the templates lay out.

Each builder answers one question. The runs list: how has the pass rate moved, and which
run should I look at? A run: how good was it, with what certainty, which criteria failed,
and which cases must I read? Test cases count in the figures and appear nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from soev_pipeline.run.results import Comparison, GroupFigures, Report

from .case_pages import ChangeCounts, change_counts
from .i18n import N_, current
from .index import STATUS_FILTERS, CaseEntry
from .plots import Plot, Point, forest, trend
from .store import RunStore, RunSummary
from .tables import (
    GROUP_COLUMNS,
    GROUP_HIDDEN,
    STATUS_COLUMNS,
    Cell,
    Table,
    build_table,
    interval,
    pct,
    plain,
    points,
    verdict_cell,
)
from .translate import _

PAGE_SIZE = 50

STATUS_NAMES: Mapping[str, str] = {
    "failed": N_("case did not pass every attempt"),
    "passed": N_("case passed every attempt"),
    "fail": N_("a verdict failed"),
    "error": N_("a verdict is an error"),
    "not_applicable": N_("a verdict is not applicable"),
    "pass": N_("a verdict passed"),
}


def _split(name: str) -> str:
    return _("split {name}").format(name=name)


def _suite(name: str) -> str:
    return _("suite {name}").format(name=name)


def when(moment: datetime) -> str:
    """A moment as the pages show it: UTC, to the minute."""
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _point(figures: GroupFigures | None) -> Point:
    if figures is None or figures.pass_rate is None:
        return Point(None, None, None)
    low, high = figures.ci95 if figures.ci95 is not None else (None, None)
    return Point(figures.pass_rate, low, high)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True)


# The runs list


@dataclass(frozen=True)
class RunRow:
    run_id: str
    started: str
    split: str
    k: int
    cases: int | None
    attempts: int | None
    pass_rate: str
    change: str | None
    change_verdict: Cell | None
    baseline: str | None
    scoring: str | None
    problem: str | None


@dataclass(frozen=True)
class RunsPage:
    project: str
    runs: tuple[RunRow, ...]
    plots: tuple[Plot, ...]


def _run_row(summary: RunSummary) -> RunRow:
    report = summary.report
    manifest = summary.manifest
    change = verdict = baseline = None
    if report is not None and report.previous is not None:
        previous = report.previous
        change = points(previous.overall.delta)
        verdict = verdict_cell(previous.overall.model_dump())
        baseline = previous.baseline_id
    overall = report.overall if report is not None else None
    rate = _("not graded yet")
    if overall is not None:
        ci = interval(overall.ci95)
        rate = pct(overall.pass_rate) + (f" [{ci}]" if ci else "")
    return RunRow(
        run_id=summary.run_id,
        started=when(summary.started),
        split=manifest.split or "dev+test",
        k=manifest.k,
        cases=overall.cases if overall is not None else None,
        attempts=overall.attempts if overall is not None else None,
        pass_rate=rate if summary.problem is None else _("unreadable"),
        change=change,
        change_verdict=verdict,
        baseline=baseline,
        scoring=report.scoring.scoring if report is not None else None,
        problem=summary.problem,
    )


def _plots(store: RunStore, runs: Sequence[RunSummary]) -> tuple[Plot, ...]:
    graded = [summary for summary in reversed(runs) if summary.report is not None]
    if not graded:
        return ()
    moments = [summary.started for summary in graded]
    reports = [summary.report for summary in graded if summary.report is not None]
    suites = list(store.suites)
    for report in reports:
        suites += [name for name in report.suites if name not in suites]
    plots = [
        trend(
            _("Overall pass rate"),
            moments,
            [_point(report.overall) for report in reports],
            wide=True,
        )
    ]
    for name in suites:
        rates = [_point(report.suites.get(name)) for report in reports]
        if any(point.rate is not None for point in rates):
            plots.append(trend(_("Suite {name}").format(name=name), moments, rates, wide=False))
    return tuple(plots)


def runs_page(store: RunStore) -> RunsPage:
    """The project's runs, newest first, and the pass rates over them as plots."""
    runs = store.runs()
    signature = tuple(
        (summary.run_id, summary.report.scoring.scoring if summary.report else None)
        for summary in runs
    )
    plots = store.memo("runs plots", signature, lambda: _plots(store, runs))
    return RunsPage(store.project, tuple(_run_row(summary) for summary in runs), plots)


# A run


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    suite: str
    passed: int
    attempts: int
    pass_rate: str
    mean_score: float | None
    failing: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Filters:
    suite: str = ""
    status: str = ""
    criterion: str = ""
    query: str = ""
    page: int = 1

    def params(self, page: int | None = None) -> dict[str, str]:
        """The query parameters of these filters (on another `page`), the empty ones left out."""
        page = self.page if page is None else page
        values = {
            "suite": self.suite,
            "status": self.status,
            "criterion": self.criterion,
            "q": self.query,
            "page": str(page) if page > 1 else "",
        }
        return {key: value for key, value in values.items() if value}


@dataclass(frozen=True)
class ComparisonLine:
    """One line about the comparison with the previous run, linking to its page."""

    baseline_id: str
    verdict: Cell
    change: str
    counts: ChangeCounts


@dataclass(frozen=True)
class RunPage:
    project: str
    run_id: str
    started: str
    split: str
    k: int
    scoring: str | None
    graded_at: str | None
    judge: str | None
    offline: bool
    groups: Table | None
    forest: Plot | None
    criteria: Table | None
    previous: ComparisonLine | None
    cases: tuple[CaseRow, ...]
    matched: int
    dev_cases: int
    filters: Filters
    pages: int
    suites: tuple[str, ...]
    kinds: tuple[str, ...]
    statuses: Mapping[str, str]
    problem: str | None


def case_row(entry: CaseEntry) -> CaseRow:
    return CaseRow(
        case_id=entry.case_id,
        suite=entry.suite,
        passed=entry.passed,
        attempts=entry.attempts,
        pass_rate=pct(entry.pass_rate),
        mean_score=entry.mean_score,
        failing=tuple(entry.failing.items()),
    )


def group_table(report: Report) -> Table:
    """The figures of the whole run, each split and each suite, with their intervals."""
    rows = [(_("overall"), _dump(report.overall))]
    rows += [(_split(name), _dump(group)) for name, group in report.splits.items()]
    rows += [(_suite(name), _dump(group)) for name, group in report.suites.items()]
    return build_table(rows, GROUP_COLUMNS, hidden=GROUP_HIDDEN, row_css={_("overall"): "strong"})


def criteria_table(report: Report) -> Table:
    """How many verdicts of each criterion had each status, over every attempt."""
    rows = [(kind, _dump(counts)) for kind, counts in report.criteria.items()]
    return build_table(rows, STATUS_COLUMNS)


def run_forest(report: Report) -> Plot:
    """The run page's plot: the pass rate of the run, each split and each suite, its
    words in the current language."""
    rows = [(_("overall"), _point(report.overall))]
    rows += [(_split(name), _point(group)) for name, group in report.splits.items()]
    rows += [(_suite(name), _point(group)) for name, group in report.suites.items()]
    return forest(_("Pass rate with its 95 % interval"), rows)


def comparison_line(comparison: Comparison) -> ComparisonLine:
    return ComparisonLine(
        baseline_id=comparison.baseline_id,
        verdict=verdict_cell(comparison.overall.model_dump()),
        change=points(comparison.overall.delta),
        counts=change_counts(comparison),
    )


def clean_filters(
    store: RunStore,
    report: Report | None,
    *,
    suite: str = "",
    status: str = "",
    criterion: str = "",
    query: str = "",
    page: int = 1,
) -> Filters:
    """The filters of a request, with values the run does not have dropped."""
    kinds = report.criteria if report is not None else {}
    return Filters(
        suite=suite if suite in store.suites or (report and suite in report.suites) else "",
        status=status if status in STATUS_FILTERS else "",
        criterion=criterion if criterion in kinds else "",
        query=query.strip()[:200],
        page=max(1, page),
    )


def run_page(store: RunStore, run_id: str, filters: Filters, *, plot: bool = True) -> RunPage:
    """A run: its figures with intervals, its criteria, and a page of its dev cases.

    Raises:
        NotFound: the project has no run `run_id`.
        ProjectError: the run's report or verdicts do not read.
    """
    archive, manifest = store.archive(run_id)
    report = store.report(archive)
    index = store.index(archive)
    filters = clean_filters(
        store,
        report,
        suite=filters.suite,
        status=filters.status,
        criterion=filters.criterion,
        query=filters.query,
        page=filters.page,
    )
    chosen = (
        index.select(
            suite=filters.suite or None,
            status=filters.status or None,
            criterion=filters.criterion or None,
            query=filters.query,
            suite_order=manifest.suites,
        )
        if index is not None
        else []
    )
    pages = max(1, math.ceil(len(chosen) / PAGE_SIZE))
    page = min(filters.page, pages)
    shown = chosen[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    previous = None
    if report is not None and report.previous is not None:
        previous = comparison_line(report.previous)
    judge = plain(report.scoring.judge) if report is not None and report.scoring.judge else None
    return RunPage(
        project=store.project,
        run_id=archive.run_id,
        started=when(manifest.created_at),
        split=manifest.split or "dev+test",
        k=manifest.k,
        scoring=report.scoring.scoring if report else None,
        graded_at=report.scoring.created_at[:16].replace("T", " ") + " UTC" if report else None,
        judge=judge,
        offline=report.scoring.offline if report else False,
        groups=group_table(report) if report else None,
        forest=(
            (index.forest if index is not None and index.forest_language == current() else None)
            or store.memo(
                ("forest", archive.path, current()),
                (report.scoring.scoring, report.scoring.created_at),
                lambda: run_forest(report),
            )
            if report and plot
            else None
        ),
        criteria=criteria_table(report) if report else None,
        previous=previous,
        cases=tuple(case_row(entry) for entry in shown),
        matched=len(chosen),
        dev_cases=len(index.cases) if index is not None else 0,
        filters=Filters(filters.suite, filters.status, filters.criterion, filters.query, page),
        pages=pages,
        suites=tuple(dict.fromkeys([*manifest.suites, *(report.suites if report else ())])),
        kinds=tuple(report.criteria) if report else (),
        statuses={value: _(name) for value, name in STATUS_NAMES.items()},
        problem=None if report is not None else _("this run has not been graded yet"),
    )
