"""Compare two runs of a project case by case, like with like
(docs/statistics.md#two-runs-paired-differences-and-the-sign-test).

Each run contributes, for every case its latest scoring graded (test cases included), the
passes of the attempts that ran, in attempt order, and how many did not run (`run.unrun`).
A case is paired when both runs have it with the same digest and at least one attempt ran
in each; its two rates are taken over the first m attempts that ran in each run, m the
smaller count, so runs made with different k or with attempts that did not run are
compared on the same number of attempts. Groups are the whole run, each suite and each
split; one Holm family covers every group with a changed pair. Only dev cases are named.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Split
from soev_pipeline.core.stats import ALPHA, holm, paired_figures, verdict

from .archive import VERDICTS, RunArchive, list_runs, naming
from .manifest import Manifest
from .results import CaseChange, Comparison, GradedAttempt, PairedGroup, UnrunPair, UnrunTally
from .unrun import INTERRUPTED, MAX_UNRUN, AttemptLedger, read_ledger, tally, too_many


@dataclass(frozen=True, slots=True)
class CaseAttempts:
    """One case of a run: where it belongs, its digest, and how its attempts went.

    `passes` holds whether each attempt that ran passed, in attempt order; `unrun` counts
    the attempts that did not run. `suite` and `split` are None for a case none of whose
    attempts was archived.
    """

    suite: str | None
    split: Split | None
    digest: str | None
    passes: tuple[bool, ...]
    unrun: int = 0
    seconds: float = 0.0

    @property
    def attempts(self) -> int:
        return len(self.passes) + self.unrun

    @property
    def rate(self) -> float:
        """The one-run pass rate: attempts that did not run count as failed."""
        return sum(self.passes) / self.attempts if self.attempts else 0.0

    def first(self, m: int) -> float:
        """The pass rate over the first `m` attempts that ran (1 ≤ m ≤ len(passes))."""
        return sum(self.passes[:m]) / m


@dataclass(frozen=True)
class RunAttempts:
    """The attempts of one scoring of a run, case by case, with the run's suite order."""

    run_id: str
    project: str
    suites: tuple[str, ...]
    k: int
    cases: Mapping[str, CaseAttempts]
    planned: int = 0
    unrun: UnrunTally = field(default_factory=UnrunTally)

    def inconclusive(self, max_unrun: float = MAX_UNRUN) -> bool:
        """Whether more than `max_unrun` of the run's planned attempts did not run."""
        return too_many(self.unrun.attempts, self.planned, max_unrun)


class AttemptsCollector:
    """Collects a scoring's graded attempts, with the run's ledger, into `RunAttempts`.

    Without a ledger (a report built from graded attempts alone) every graded attempt ran,
    and a planned attempt (of `k` per case) of a graded case that has no graded line was
    interrupted.
    """

    def __init__(self, k: int, ledger: AttemptLedger | None = None) -> None:
        self.k = k
        self.ledger = ledger
        self._attempts: dict[str, dict[int, bool]] = defaultdict(dict)
        self._place: dict[str, tuple[str, Split]] = {}

    def add(self, case_id: str, suite: str, split: Split, attempt: int, passed: bool) -> bool:
        """Record a graded attempt; return whether it ran (else it counts as failed)."""
        self._place[case_id] = (suite, split)
        self._attempts[case_id].setdefault(attempt, passed)
        return self.unrun_code(case_id, attempt) is None

    def unrun_code(self, case_id: str, attempt: int) -> str | None:
        """Why a graded attempt did not run, or None when it ran. (A graded attempt was
        archived, whatever the evidence says now: it was not interrupted.)"""
        if self.ledger is None:
            return None
        code = self.ledger.unrun.get((case_id, attempt))
        return None if code == INTERRUPTED else code

    def missing(self, case_id: str) -> list[int]:
        """The planned attempts of a graded case that have no graded line: interrupted."""
        graded = self._attempts.get(case_id, {})
        return [attempt for attempt in range(self.k) if attempt not in graded]

    def result(self, manifest: Manifest) -> RunAttempts:
        """The attempts of the run of `manifest`, from what was collected."""
        ledger = self.ledger
        codes: dict[tuple[str, int], str] = {}
        if ledger is not None:
            codes = {
                (case_id, attempt): code
                for (case_id, attempt), code in ledger.unrun.items()
                if code != INTERRUPTED or attempt not in self._attempts.get(case_id, {})
            }
        cases: dict[str, CaseAttempts] = {}
        for case_id, attempts in self._attempts.items():
            for attempt in self.missing(case_id):
                codes.setdefault((case_id, attempt), INTERRUPTED)
            ran = [
                passed
                for attempt, passed in sorted(attempts.items())
                if self.unrun_code(case_id, attempt) is None
            ]
            cases[case_id] = CaseAttempts(
                *self._place[case_id],
                manifest.cases.get(case_id),
                tuple(ran),
                len(attempts) - len(ran) + len(self.missing(case_id)),
                ledger.seconds.get(case_id, 0.0) if ledger is not None else 0.0,
            )
        if ledger is not None:
            for case_id, digest in manifest.cases.items():
                planned = [(case_id, attempt) for attempt in range(manifest.k)]
                if case_id not in cases and all(
                    ledger.unrun.get(key) == INTERRUPTED for key in planned
                ):
                    cases[case_id] = CaseAttempts(None, None, digest, (), manifest.k)
        return RunAttempts(
            manifest.run_id,
            manifest.project,
            manifest.suites,
            manifest.k,
            cases,
            len(manifest.cases) * manifest.k,
            tally(codes),
        )


def attempts_from_graded(
    manifest: Manifest, graded: Iterable[GradedAttempt], ledger: AttemptLedger | None = None
) -> RunAttempts:
    """The attempts of a scoring from its graded attempts (and the run's ledger)."""
    collector = AttemptsCollector(manifest.k, ledger)
    for attempt in graded:
        collector.add(
            attempt.case_id, attempt.suite, attempt.split, attempt.attempt, attempt.passed
        )
    return collector.result(manifest)


def _read(archive: RunArchive, manifest: Manifest, ledger: AttemptLedger) -> RunAttempts:
    report = archive.latest_report_path()
    if report is None:
        raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring yet")
    path = report.parent / VERDICTS
    collector = AttemptsCollector(manifest.k, ledger)
    with naming(path), path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                collector.add(
                    raw["case_id"], raw["suite"], raw["split"], int(raw["attempt"]), raw["passed"]
                )
            except (ValueError, KeyError, TypeError):
                raise ProjectError(f"{path}: line {number}: not a graded attempt") from None
    return collector.result(manifest)


def read_attempts(archive: RunArchive) -> RunAttempts:
    """The attempts of the run's latest scoring that has a report, with its evidence's
    verdict on which of them ran.

    Raises:
        ProjectError: the run does not exist or has no scoring yet, or a line of its
            verdicts or evidence does not read.
    """
    manifest = archive.manifest()
    return _read(archive, manifest, read_ledger(archive, manifest))


def _previous(
    runs_dir: Path, manifest: Manifest, max_unrun: float
) -> tuple[RunArchive, Manifest, AttemptLedger] | None:
    earlier = [
        (run, other)
        for run, other in list_runs(runs_dir)
        if run.run_id != manifest.run_id
        and other.project == manifest.project
        and other.created_at < manifest.created_at
    ]
    for run, other in reversed(earlier):
        if run.latest_report_path() is None:
            continue
        try:
            ledger = read_ledger(run, other)
        except (ProjectError, OSError):
            continue
        if not ledger.inconclusive(max_unrun):
            return run, other, ledger
    return None


def previous_run(
    runs_dir: Path, manifest: Manifest, *, max_unrun: float = MAX_UNRUN
) -> RunArchive | None:
    """The newest earlier run of the same project that has a report and is not
    inconclusive by itself (more than `max_unrun` of its attempts did not run), or None.

    A run whose evidence does not read is passed over: it cannot say what ran.
    """
    found = _previous(runs_dir, manifest, max_unrun)
    return None if found is None else found[0]


def latest_run(runs_dir: Path, project: str) -> RunArchive | None:
    """The newest run of `project` in `runs_dir` that has a report, or None."""
    for run, manifest in reversed(list_runs(runs_dir)):
        if manifest.project == project and run.latest_report_path() is not None:
            return run
    return None


def previous_attempts(runs_dir: Path, manifest: Manifest) -> RunAttempts | None:
    """The attempts of the previous run (see `previous_run`), or None.

    A previous run whose scoring no longer reads is passed over with None, so that it
    cannot stop the aggregation of a new run.
    """
    found = _previous(runs_dir, manifest, MAX_UNRUN)
    if found is None:
        return None
    try:
        return _read(*found)
    except (ProjectError, OSError):
        return None


class _Pair(NamedTuple):
    """A paired case and its two rates over the same attempts (like with like)."""

    case_id: str
    suite: str
    split: Split
    now: float
    before: float


def _pairs(now: RunAttempts, baseline: RunAttempts) -> tuple[list[_Pair], int, int, int]:
    paired: list[_Pair] = []
    changed = unpaired = unrun = 0
    for case_id in sorted(set(now.cases) | set(baseline.cases)):
        current, before = now.cases.get(case_id), baseline.cases.get(case_id)
        if current is None or before is None:
            unpaired += 1
        elif current.digest is None or current.digest != before.digest:
            changed += 1
        elif (m := min(len(current.passes), len(before.passes))) == 0:
            unrun += 1
        elif current.suite is not None and current.split is not None:
            pair = _Pair(case_id, current.suite, current.split, current.first(m), before.first(m))
            paired.append(pair)
    order = {name: index for index, name in enumerate(now.suites)}
    paired.sort(key=lambda pair: (order.get(pair.suite, len(order)), pair.suite, pair.case_id))
    return paired, changed, unpaired, unrun


def compare_rates(
    now: RunAttempts,
    baseline: RunAttempts,
    *,
    alpha: float = ALPHA,
    max_unrun: float = MAX_UNRUN,
) -> Comparison:
    """Compare two runs of one project by their paired cases, like with like.

    The comparison is inconclusive, and so is every group's verdict, when more than
    `max_unrun` of either run's attempts did not run.

    Raises:
        ProjectError: the runs belong to different projects.
    """
    if now.project != baseline.project:
        raise ProjectError(
            f"run {baseline.run_id!r} belongs to project {baseline.project!r}, "
            f"not {now.project!r}: only runs of one project compare"
        )
    paired, changed, unpaired, unrun = _pairs(now, baseline)
    members: dict[tuple[str, str], list[_Pair]] = {("overall", ""): paired}
    for pair in paired:
        members.setdefault(("suite", pair.suite), []).append(pair)
    for split in sorted({pair.split for pair in paired}):
        members[("split", split)] = [pair for pair in paired if pair.split == split]
    figures = {
        key: paired_figures([p.now for p in group], [p.before for p in group])
        for key, group in members.items()
    }
    family = holm({key: f.p_value for key, f in figures.items() if f.changed})
    inconclusive = now.inconclusive(max_unrun) or baseline.inconclusive(max_unrun)
    groups: dict[tuple[str, str], PairedGroup] = {}
    for key, f in figures.items():
        p_holm = family.get(key, 1.0)
        groups[key] = PairedGroup(
            pairs=f.pairs,
            pass_rate=f.pass_rate,
            baseline_pass_rate=f.baseline_pass_rate,
            delta=f.delta,
            stderr=f.stderr,
            ci95=f.ci95,
            improved=f.improved,
            regressed=f.regressed,
            unchanged=f.unchanged,
            p_value=f.p_value,
            p_holm=p_holm,
            verdict="inconclusive" if inconclusive else verdict(f.delta, p_holm, alpha),
        )
    changes = [
        CaseChange(
            case_id=pair.case_id,
            suite=pair.suite,
            pass_rate=pair.now,
            baseline_pass_rate=pair.before,
        )
        for pair in paired
        if pair.split == "dev" and pair.now != pair.before
    ]
    return Comparison(
        run_id=now.run_id,
        baseline_id=baseline.run_id,
        alpha=alpha,
        changed_cases=changed,
        unpaired_cases=unpaired,
        unrun_cases=unrun,
        unrun=UnrunPair(run=now.unrun, baseline=baseline.unrun),
        inconclusive=inconclusive,
        overall=groups[("overall", "")],
        suites={key[1]: group for key, group in groups.items() if key[0] == "suite"},
        splits={key[1]: group for key, group in groups.items() if key[0] == "split"},
        regressions=tuple(c for c in changes if c.pass_rate < c.baseline_pass_rate),
        improvements=tuple(c for c in changes if c.pass_rate > c.baseline_pass_rate),
    )


def compare_runs(
    run: RunArchive,
    baseline: RunArchive,
    *,
    alpha: float = ALPHA,
    max_unrun: float = MAX_UNRUN,
) -> Comparison:
    """Compare the latest scorings of two runs (`soev-evals compare RUN BASELINE`).

    Raises:
        ProjectError: a run is missing or unscored, the runs belong to different
            projects, or they share no case (and the comparison is not inconclusive,
            which says why on its own).
    """
    if run.run_id == baseline.run_id:
        raise ProjectError(f"run {run.run_id!r} cannot be its own baseline")
    comparison = compare_rates(
        read_attempts(run), read_attempts(baseline), alpha=alpha, max_unrun=max_unrun
    )
    if comparison.overall.pairs == 0 and not comparison.inconclusive:
        raise ProjectError(
            f"runs {run.run_id!r} and {baseline.run_id!r} share no case with the same digest "
            f"and an attempt that ran in both ({comparison.changed_cases} changed, "
            f"{comparison.unpaired_cases} unpaired, {comparison.unrun_cases} without an "
            "attempt that ran)"
        )
    return comparison
