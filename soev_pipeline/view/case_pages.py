"""The page builders of a case, of a comparison of two runs, and of a unit of the corpus.

A case page answers: what was asked, what did the assistant say and cite, and why did each
criterion judge it so? A comparison answers: did the run get worse than its baseline, with
what certainty, and what changed in the cases that got worse? Only dev cases are found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.models import Case
from soev_pipeline.corpus import CorpusUnit
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.compare import paired_attempts
from soev_pipeline.run.results import Comparison, GradedAttempt
from soev_pipeline.run.run_attempts import CaseAttempts

from .attempts import (
    AttemptView,
    Citation,
    Text,
    VerdictRow,
    attempt_view,
    status_counts,
    status_shares,
    unit_of,
    verdict_rows,
)
from .decided import WhatFailed, what_failed
from .i18n import N_
from .queue import label_items
from .store import NotFound, RunStore
from .tables import PAIRED_COLUMNS, PAIRED_HIDDEN, Table, build_table, pct, plain
from .translate import _

SIDE_BY_SIDE = 3
"""Attempts of each run that a regressed case shows in a comparison."""
COMPARE_PAGE_SIZE = 20


@dataclass(frozen=True)
class Expectation:
    """What the project's case expects now; `changed` when it differs from the run's case."""

    behaviour: str
    message: str | None
    required: tuple[tuple[Citation, ...], ...]
    forbidden: tuple[Citation, ...]
    nuggets: tuple[tuple[str, bool], ...]
    tags: tuple[str, ...]
    changed: bool


@dataclass(frozen=True)
class CasePage:
    project: str
    run_id: str
    case_id: str
    suite: str
    passed: int
    attempts_run: int
    pass_rate: str
    expectation: Expectation | None
    questions: tuple[Text, ...]
    attempts: tuple[AttemptView, ...]
    verdicts: tuple[VerdictRow, ...]

    @property
    def failed(self) -> tuple[VerdictRow, ...]:
        """The criteria that failed or erred on at least one attempt."""
        return tuple(row for row in self.verdicts if row.failed)

    @property
    def what_failed(self) -> WhatFailed:
        """The root causes, the verdicts that decided the result, and the uncounted ones."""
        return what_failed(self.verdicts, self.attempts)

    @property
    def unfailed(self) -> tuple[VerdictRow, ...]:
        """The criteria that passed (or did not apply) on every attempt."""
        return tuple(row for row in self.verdicts if not row.failed)


def _expectation(store: RunStore, case: Case | None, digest: str | None) -> Expectation | None:
    if case is None:
        return None
    corpus = store.corpus
    message = None
    if case.message is not None:
        text = store.loaded.context.messages.get(case.message)
        message = case.message + (f": {text}" if text else "")
    return Expectation(
        behaviour=case.behaviour,
        message=message,
        required=tuple(
            tuple(Citation(source, unit_of(source, corpus)) for source in group)
            for group in case.sources.required
        ),
        forbidden=tuple(Citation(s, unit_of(s, corpus)) for s in case.sources.forbidden),
        nuggets=tuple((nugget.text, nugget.vital) for nugget in case.nuggets),
        tags=case.tags,
        changed=digest is not None and digest != case.digest(),
    )


def _attempts(
    store: RunStore, archive: RunArchive, case_id: str
) -> tuple[list[GradedAttempt], list[AttemptView], dict[int, str]]:
    """A case's graded attempts, their views, and the SHA-256 of each final reply."""
    index = store.index(archive)
    if index is None or case_id not in index.cases:
        raise NotFound(_("no such dev case in this run"))
    graded = index.graded(case_id)
    evidence = index.evidence(case_id)
    views = [attempt_view(g, evidence.get(g.attempt), store.corpus) for g in graded]
    replies = {n: sha256_text(e.reply) for n, e in evidence.items() if e.reply is not None}
    return graded, views, replies


def case_page(store: RunStore, run_id: str, case_id: str) -> CasePage:
    """A dev case of a run: its questions, each attempt's reply and every verdict.

    Raises:
        NotFound: the run has no such dev case (a test case is never found).
    """
    archive, manifest = store.archive(run_id)
    graded, views, replies = _attempts(store, archive, case_id)
    case = store.dev_case(case_id)
    passed = sum(g.passed for g in graded)
    first = views[0] if views else None
    questions = tuple(turn.question for turn in first.turns) if first else ()
    if not any(q.shown for q in questions) and case is not None:
        questions = tuple(Text.of(turn) or Text("") for turn in case.turns)
    return CasePage(
        project=store.project,
        run_id=archive.run_id,
        case_id=case_id,
        suite=graded[0].suite if graded else "",
        passed=passed,
        attempts_run=len(graded),
        pass_rate=pct(passed / len(graded)) if graded else "–",
        expectation=_expectation(store, case, manifest.cases.get(case_id)),
        questions=questions,
        attempts=tuple(views),
        verdicts=tuple(
            verdict_rows(graded, case, replies, store.loaded.registry, label_items(store))
        ),
    )


# A comparison


@dataclass(frozen=True)
class VerdictChange:
    criterion: str
    before: str
    after: str
    detail: Text | None


@dataclass(frozen=True)
class Pairing:
    """Which attempts of a case the comparison paired (by attempt number), and how each run
    fared over all its attempts, as its run page shows it (an attempt that did not run
    counts as failed there, and is left out of the pairs)."""

    run: tuple[int, ...]
    baseline: tuple[int, ...]
    run_passed: int
    run_attempts: int
    run_rate: str
    baseline_passed: int
    baseline_attempts: int
    baseline_rate: str


def pairing(now: CaseAttempts, before: CaseAttempts) -> Pairing:
    """The pairing of one case, by the rule of the comparison (`run.compare.paired_attempts`)."""
    ours, theirs = paired_attempts(now, before)
    return Pairing(
        run=ours,
        baseline=theirs,
        run_passed=sum(now.passes),
        run_attempts=now.attempts,
        run_rate=pct(now.rate),
        baseline_passed=sum(before.passes),
        baseline_attempts=before.attempts,
        baseline_rate=pct(before.rate),
    )


@dataclass(frozen=True)
class ChangedCase:
    case_id: str
    suite: str
    pass_rate: str
    baseline_pass_rate: str
    pairing: Pairing | None
    changes: tuple[VerdictChange, ...]
    before: tuple[AttemptView, ...]
    after: tuple[AttemptView, ...]
    more_before: int
    more_after: int


@dataclass(frozen=True)
class ChangeRow:
    case_id: str
    suite: str
    pass_rate: str
    baseline_pass_rate: str


@dataclass(frozen=True)
class ChangeCounts:
    """How many paired cases got worse, better or stayed the same, overall and among the
    dev cases: the figures of the comparison table's rows `overall` and `split dev`, which
    every summary of a comparison quotes, so that the counts on the pages agree."""

    pairs: int
    regressed: int
    improved: int
    unchanged: int
    dev_regressed: int
    dev_improved: int


def change_counts(comparison: Comparison) -> ChangeCounts:
    overall = comparison.overall
    dev = comparison.splits.get("dev")
    return ChangeCounts(
        pairs=overall.pairs,
        regressed=overall.regressed,
        improved=overall.improved,
        unchanged=overall.unchanged,
        dev_regressed=dev.regressed if dev is not None else 0,
        dev_improved=dev.improved if dev is not None else 0,
    )


@dataclass(frozen=True)
class ComparePage:
    project: str
    run_id: str
    baseline_id: str
    facts: tuple[tuple[str, str], ...]
    groups: Table
    counts: ChangeCounts
    regressions: tuple[ChangedCase, ...]
    regressed: int
    """The dev cases that got worse and are shown (not a test case in the project now)."""
    improvements: tuple[ChangeRow, ...]
    page: int
    pages: int


_STRUCTURED = {
    "run_id",
    "baseline_id",
    "overall",
    "suites",
    "splits",
    "regressions",
    "improvements",
}


FACT_NAMES = {
    "alpha": N_("alpha"),
    "changed_cases": N_("cases changed since the baseline (not paired)"),
    "unpaired_cases": N_("cases in one run only (not paired)"),
    "unrun_cases": N_("cases without an attempt that ran in both (not paired)"),
    "unrun": N_("attempts that did not run"),
    "inconclusive": N_("inconclusive"),
}
"""The names of the comparison's own fields, to translate; a field added later shows as
its key."""


def comparison_facts(comparison: Comparison) -> tuple[tuple[str, str], ...]:
    """The comparison's own fields beside its tables, each as (name, value)."""
    dumped = comparison.model_dump(mode="json")
    return tuple(
        (_(FACT_NAMES[key]) if key in FACT_NAMES else key.replace("_", " "), plain(value))
        for key, value in dumped.items()
        if key not in _STRUCTURED
    )


def comparison_table(comparison: Comparison) -> Table:
    """Section 10's table: the whole run, each suite and each split, paired and tested."""
    rows = [(_("overall"), comparison.overall.model_dump(mode="json"))]
    rows += [
        (_("suite {name}").format(name=name), g.model_dump(mode="json"))
        for name, g in comparison.suites.items()
    ]
    rows += [
        (_("split {name}").format(name=name), g.model_dump(mode="json"))
        for name, g in comparison.splits.items()
    ]
    return build_table(rows, PAIRED_COLUMNS, hidden=PAIRED_HIDDEN, row_css={_("overall"): "strong"})


def verdict_changes(
    before: Sequence[VerdictRow], after: Sequence[VerdictRow]
) -> list[VerdictChange]:
    """The criteria whose statuses differ between the two runs' attempts of a case."""
    earlier = {row.name: row for row in before}
    changes = []
    for row in after:
        old = earlier.pop(row.name, None)
        if old is not None and status_shares(old) == status_shares(row):
            continue
        was = status_counts(old) if old is not None else _("not graded")
        failing = next((c for c in row.cells if c and c.status in ("fail", "error")), None)
        detail = failing.detail if failing is not None else None
        changes.append(VerdictChange(row.name, was, status_counts(row), detail))
    changes += [
        VerdictChange(name, status_counts(row), _("not graded"), None)
        for name, row in earlier.items()
    ]
    return changes


def changed_case(
    store: RunStore,
    run: RunArchive,
    baseline: RunArchive,
    case_id: str,
    suite: str,
    rates: tuple[float, float],
) -> ChangedCase:
    """A case of both runs: which attempts were paired, what changed in its verdicts, and
    its replies side by side."""
    ours, theirs = (store.attempts(side).cases.get(case_id) for side in (run, baseline))
    case = store.dev_case(case_id)
    graded_after, after, _ = _attempts(store, run, case_id)
    try:
        graded_before, before, _ = _attempts(store, baseline, case_id)
    except NotFound:
        graded_before, before = [], []
    no_labels: dict[int, str] = {}
    changes = verdict_changes(
        verdict_rows(graded_before, case, no_labels), verdict_rows(graded_after, case, no_labels)
    )
    return ChangedCase(
        case_id=case_id,
        suite=suite,
        pass_rate=pct(rates[0]),
        baseline_pass_rate=pct(rates[1]),
        pairing=pairing(ours, theirs) if ours is not None and theirs is not None else None,
        changes=tuple(changes),
        before=tuple(before[:SIDE_BY_SIDE]),
        after=tuple(after[:SIDE_BY_SIDE]),
        more_before=max(0, len(before) - SIDE_BY_SIDE),
        more_after=max(0, len(after) - SIDE_BY_SIDE),
    )


def compare_page(store: RunStore, run_id: str, baseline_id: str, page: int = 1) -> ComparePage:
    """A run against its baseline (`previous`, or a run id): the figures of `compare`, then the
    regressed cases, a page at a time, and the improved ones.

    Raises:
        NotFound: no such run, or `previous` and the run has no earlier graded run.
        ProjectError: a run has no scoring, or the runs share no case.
    """
    run, manifest = store.archive(run_id)
    baseline = store.baseline(manifest, baseline_id)
    if baseline is None:
        raise NotFound(
            _("run {run!r} has no earlier run with a report to compare with").format(run=run_id)
        )
    comparison = store.comparison(run, baseline)
    regressions = sorted(
        comparison.regressions, key=lambda c: (c.pass_rate - c.baseline_pass_rate, c.case_id)
    )
    regressions = [c for c in regressions if store.shown(c.case_id)]
    pages = max(1, -(-len(regressions) // COMPARE_PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = regressions[(page - 1) * COMPARE_PAGE_SIZE : page * COMPARE_PAGE_SIZE]
    return ComparePage(
        project=store.project,
        run_id=run.run_id,
        baseline_id=baseline.run_id,
        facts=comparison_facts(comparison),
        groups=comparison_table(comparison),
        counts=change_counts(comparison),
        regressions=tuple(
            changed_case(
                store, run, baseline, c.case_id, c.suite, (c.pass_rate, c.baseline_pass_rate)
            )
            for c in shown
        ),
        regressed=len(regressions),
        improvements=tuple(
            ChangeRow(c.case_id, c.suite, pct(c.pass_rate), pct(c.baseline_pass_rate))
            for c in comparison.improvements
            if store.shown(c.case_id)
        ),
        page=page,
        pages=pages,
    )


# The corpus


@dataclass(frozen=True)
class UnitPage:
    """A unit of the corpus, and the case of a run whose page linked to it (`origin`,
    (run id, case id)), to lead back there."""

    unit: CorpusUnit
    origin: tuple[str, str] | None


def unit_origin(store: RunStore, run_id: str | None, case_id: str | None) -> tuple[str, str] | None:
    """(run id, case id) when the run has that dev case to show, else None: an address
    can name any run and case, and a test case is never named."""
    if not run_id or not case_id:
        return None
    index = store.index_of(run_id)
    if index is None or case_id not in index.cases or not store.shown(case_id):
        return None
    return run_id, case_id


def unit_page(
    store: RunStore, unit_id: str, run_id: str | None = None, case_id: str | None = None
) -> UnitPage:
    """A unit of the project's corpus, reached from the page of `case_id` in `run_id`.

    Raises:
        NotFound: the project has no corpus, or the corpus no such unit.
    """
    unit = store.corpus.get(unit_id) if store.corpus is not None else None
    if unit is None:
        raise NotFound(_("no such unit in the corpus"))
    return UnitPage(unit, unit_origin(store, run_id, case_id))
