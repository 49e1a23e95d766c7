"""Aggregate a scoring into the report (docs/runs.md#the-report), with the error bars and
the comparison of docs/statistics.md.

Test cases count in the aggregates only: the `cases` list, the comparison's case lists and
everything else that names a case hold dev cases alone.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import STATUSES, Split, Status, Verdict

from .archive import (
    MANIFEST,
    REPORT,
    RunArchive,
    archive_at,
    naming,
    open_regular,
    write_json_atomically,
)
from .compare import compare_rates
from .grading import GradedLine, iter_graded
from .manifest import Manifest
from .plan import group_drop
from .results import (
    AttemptResult,
    CaseResult,
    Folded,
    GradedAttempt,
    GradingSummary,
    GroupFigures,
    PairedGroup,
    PublicKey,
    PublicVerdict,
    Report,
    StatusCounts,
    public_key,
)
from .run_attempts import AttemptsCollector, RunAttempts
from .scoring import AttemptScore, aggregate, case_figures
from .unrun import INTERRUPTED, AttemptLedger, read_ledger, too_many


class _DevCases:
    """The attempts of the dev cases of a scoring, collected to list them in a report.

    An attempt that did not run is listed as not passed, with its code; a planned attempt
    without evidence (interrupted) is listed without verdicts. Equal verdicts share one
    `PublicVerdict` (frozen, `_public`): most verdicts of a large run repeat one another,
    and the case list is the largest part of a report in memory.
    """

    def __init__(self, collector: AttemptsCollector) -> None:
        self._collector = collector
        self._attempts: dict[str, list[AttemptResult]] = defaultdict(list)
        self._suite: dict[str, str] = {}

    def add(
        self,
        case_id: str,
        suite: str,
        attempt: int,
        passed: bool,
        score: float | None,
        verdicts: tuple[PublicVerdict, ...],
    ) -> None:
        self._suite[case_id] = suite
        unrun = self._collector.unrun_code(case_id, attempt)
        self._attempts[case_id].append(
            AttemptResult(
                attempt=attempt,
                passed=passed and unrun is None,
                score=score,
                verdicts=verdicts,
                unrun=unrun,
            )
        )

    def results(self, suites: Sequence[str]) -> tuple[CaseResult, ...]:
        """The cases in suite order, then by id, each with its attempts in order."""
        order = {name: index for index, name in enumerate(suites)}
        cases = []
        for case_id in sorted(self._attempts, key=lambda c: (order.get(self._suite[c], 0), c)):
            attempts = self._attempts[case_id] + [
                AttemptResult(
                    attempt=number, passed=False, score=None, verdicts=(), unrun=INTERRUPTED
                )
                for number in self._collector.missing(case_id)
            ]
            figure = case_figures(
                [AttemptScore(a.score, a.passed, ran=a.unrun is None) for a in attempts]
            )
            cases.append(
                CaseResult(
                    case_id=case_id,
                    suite=self._suite[case_id],
                    split="dev",
                    pass_rate=figure.pass_rate,
                    mean_score=figure.mean_score,
                    pass_at_k=figure.pass_at_k,
                    pass_all_k=figure.pass_all_k,
                    attempts=tuple(sorted(attempts, key=lambda a: a.attempt)),
                )
            )
        return tuple(cases)


class _Public:
    """Gives equal verdicts one shared `PublicVerdict` (see `_DevCases`)."""

    def __init__(self) -> None:
        self._seen: dict[PublicKey, PublicVerdict] = {}

    def __call__(self, verdict: Verdict) -> PublicVerdict:
        return self.of_key(public_key(verdict))

    def of_key(self, key: PublicKey) -> PublicVerdict:
        public = self._seen.get(key)
        if public is None:
            public = self._seen[key] = PublicVerdict.of_key(key)
        return public


_Row = tuple[str, str, Split, int, float | None, bool, tuple[PublicVerdict, ...] | None]
"""What a report keeps of a graded attempt: case, suite, split, attempt, score, passed, and
the public verdicts of a dev case's attempt (None for a test case's)."""


class ReportFold:
    """The report of a scoring, folded one graded attempt at a time, as grading writes them.

    `add` keeps what the report needs of an attempt (its place, score and pass, the verdict
    counts, a dev case's public verdicts) and `report` builds the report from that, with
    the run's ledger, once the last attempt is in. `build_report` folds the attempts it is
    given the same way, so a report folded while the attempts are graded is the one that
    reading the verdicts back afterwards gives, byte for byte.
    """

    def __init__(self) -> None:
        self._rows: list[_Row] = []
        self._criteria: dict[str, dict[Status, int]] = {}
        self._public = _Public()

    def add(self, attempt: GradedAttempt) -> None:
        """Fold in one graded attempt, in the order of the verdicts."""
        self._add(Folded.of(attempt))

    def add_line(self, line: str) -> None:
        """Fold in a line of `verdicts.jsonl`, as it is written: what a `GradedLine`
        carries, any other line read into a graded attempt."""
        if isinstance(line, GradedLine):
            self._add(line.folded)
        else:
            self.add(GradedAttempt.model_validate_json(line))

    def _add(self, folded: Folded) -> None:
        for kind, status, *_ in folded.verdicts:
            counts = self._criteria.get(kind)
            if counts is None:
                counts = self._criteria[kind] = dict.fromkeys(STATUSES, 0)
            counts[status] += 1
        public = None
        if folded.split == "dev":
            public = tuple(map(self._public.of_key, folded.verdicts))
        self._rows.append(
            (
                folded.case_id,
                folded.suite,
                folded.split,
                folded.attempt,
                folded.score,
                folded.passed,
                public,
            )
        )

    def report(
        self,
        manifest: Manifest,
        *,
        scoring: GradingSummary,
        previous: RunAttempts | None = None,
        ledger: AttemptLedger | None = None,
    ) -> Report:
        """The report of the attempts folded so far (see `build_report`)."""
        return self.build(manifest, scoring=scoring, previous=previous, ledger=ledger)[0]

    def build(
        self,
        manifest: Manifest,
        *,
        scoring: GradingSummary,
        previous: RunAttempts | None = None,
        ledger: AttemptLedger | None = None,
    ) -> tuple[Report, RunAttempts]:
        """`report`, and the run's attempts as a comparison pairs them (what
        `run_attempts.read_attempts` reads once the report is written)."""
        collector = AttemptsCollector(manifest.k, ledger)
        scores: dict[str, list[AttemptScore]] = defaultdict(list)
        place: dict[str, tuple[str, Split]] = {}
        dev = _DevCases(collector)
        for case_id, suite, split, number, score, passed, public in self._rows:
            ran = collector.add(case_id, suite, split, number, passed)
            scores[case_id].append(AttemptScore(score, passed, ran))
            place[case_id] = (suite, split)
            if public is not None:
                dev.add(case_id, suite, number, passed, score, public)
        for case_id, values in scores.items():
            values += [AttemptScore(None, False, ran=False)] * len(collector.missing(case_id))
        now = collector.result(manifest)
        comparison = compare_rates(now, previous) if previous is not None else None
        figures = {case_id: case_figures(values) for case_id, values in scores.items()}
        suite_order = {name: index for index, name in enumerate(manifest.suites)}
        by_suite: dict[str, list[str]] = defaultdict(list)
        by_split: dict[str, list[str]] = defaultdict(list)
        for case_id in figures:
            suite, split = place[case_id]
            by_suite[suite].append(case_id)
            by_split[split].append(case_id)

        paired_suites = comparison.suites if comparison is not None else {}
        paired_splits = comparison.splits if comparison is not None else {}

        overall = comparison.overall if comparison is not None else None

        def group(case_ids: list[str], paired: PairedGroup | None) -> GroupFigures:
            drop = group_drop(now, case_ids, paired, overall)
            return aggregate([figures[c] for c in case_ids], manifest.k, detectable_drop=drop)

        expected = len(manifest.cases) * manifest.k
        criteria = self._criteria
        report = Report(
            run_id=manifest.run_id,
            project=manifest.project,
            k=manifest.k,
            split=manifest.split,
            suites={
                name: group(by_suite[name], paired_suites.get(name))
                for name in sorted(by_suite, key=lambda n: (suite_order.get(n, 0), n))
            },
            splits={
                name: group(by_split[name], paired_splits.get(name)) for name in sorted(by_split)
            },
            overall=group(list(figures), overall),
            criteria={
                kind: StatusCounts.model_validate(counts)
                for kind, counts in sorted(criteria.items())
            },
            cases=dev.results(manifest.suites),
            expected_attempts=expected,
            unrun=now.unrun,
            inconclusive=too_many(now.unrun.attempts, expected),
            scoring=scoring,
            prompts=dict(manifest.prompts),
            previous=comparison,
        )
        return report, now


def build_report(
    manifest: Manifest,
    graded: Iterable[GradedAttempt],
    *,
    scoring: GradingSummary,
    previous: RunAttempts | None = None,
    ledger: AttemptLedger | None = None,
) -> Report:
    """Build the report of one scoring from its graded attempts (streamed once).

    `ledger` is what the run's evidence says about each attempt (`unrun.read_ledger`):
    the attempts that did not run count as failed, and in `unrun_attempts`. Without it,
    only the planned attempts of a graded case that have no graded line did not run. With
    `previous`, the attempts of the previous run, `previous` of the report holds the
    comparison with it (docs/statistics.md#two-runs-paired-differences-and-the-sign-test),
    at the default alpha and share of attempts that may not have run.
    """
    fold = ReportFold()
    for attempt in graded:
        fold.add(attempt)
    return fold.report(manifest, scoring=scoring, previous=previous, ledger=ledger)


def write_report(scoring_dir: Path, report: Report) -> None:
    """Write `report.json` into a scoring folder, atomically, without the report's case list.

    The case list repeats every verdict of the dev cases, which `verdicts.jsonl` of the same
    folder holds already; `load_report` lists the cases from there again. So a scoring
    keeps each verdict once, and its report.json holds the aggregates alone.
    """
    write_json_atomically(scoring_dir / REPORT, report.model_dump(mode="json", exclude={"cases"}))


def _ledger(scoring_dir: Path) -> tuple[Manifest, AttemptLedger | None] | None:
    """The manifest and ledger of the run that holds `scoring_dir`
    (`runs/<run_id>/scorings/<NNNN>`); the ledger is None when the evidence does not read,
    and both are None without a manifest."""
    run_dir = scoring_dir.parent.parent
    if not (run_dir / MANIFEST).exists():
        return None
    archive = archive_at(run_dir)
    manifest = archive.manifest()
    try:
        return manifest, read_ledger(archive, manifest)
    except (ProjectError, OSError):
        return manifest, None


def read_cases(scoring_dir: Path, suites: Sequence[str]) -> tuple[CaseResult, ...]:
    """The case list of a report, from the scoring's `verdicts.jsonl` and the run's
    evidence (which attempts did not run), in `suites` order."""
    found = _ledger(scoring_dir)
    collector = AttemptsCollector(0) if found is None else AttemptsCollector(found[0].k, found[1])
    dev = _DevCases(collector)
    public = _Public()
    for attempt in iter_graded(scoring_dir):
        collector.add(
            attempt.case_id, attempt.suite, attempt.split, attempt.attempt, attempt.passed
        )
        if attempt.split == "dev":
            verdicts = tuple(map(public, attempt.verdicts))
            dev.add(
                attempt.case_id,
                attempt.suite,
                attempt.attempt,
                attempt.passed,
                attempt.score,
                verdicts,
            )
    return dev.results(suites)


def load_report(path: Path, suites: Sequence[str]) -> Report:
    """Read a scoring's `report.json`, with the case list from the `verdicts.jsonl` beside it.

    A report.json written before the case list moved out holds the list itself, and is
    read as it is. `suites` is the run's suite order, the order of the case list.

    Raises:
        ProjectError: the file is not a valid report, or a line of the verdicts does not read.
    """
    with open_regular(path) as file, naming(path):  # never a FIFO, nor a huge file
        data = file.read()
    rescore = f"`soev-evals rescore {path.parents[2].name}` writes it anew from the evidence"
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise ProjectError(f"{path}: not a valid report (not JSON: {exc}); {rescore}") from None
    if isinstance(raw, dict) and "cases" not in raw:
        raw["cases"] = read_cases(path.parent, suites)
    try:
        return Report.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ProjectError(
            f"{path}: not a valid report ({field + ': ' if field else ''}{first['msg']}); {rescore}"
        ) from None


def read_report(archive: RunArchive) -> Report:
    """The report of the run's latest scoring. Raises `ProjectError` when it has none."""
    manifest = archive.manifest()
    path = archive.latest_report_path()
    if path is None:
        raise ProjectError(f"{archive.location}: run {archive.run_id!r} has no scoring yet")
    return load_report(path, manifest.suites)
