"""Compare two runs of a project case by case, like with like
(docs/statistics.md#two-runs-paired-differences-and-the-sign-test).

Each run contributes, for every case its latest scoring graded (test cases included), the
passes of the attempts that ran, in attempt order, and how many did not run (`run.unrun`).
A case is paired when both runs have it with the same digest and at least one attempt ran
in each; its two rates are taken over the first m attempts that ran in each run, m the
smaller count, so runs made with different k or with attempts that did not run are
compared on the same number of attempts. Groups are the whole run, each suite and each
split; the gate's family tests overall first, then the other groups with a changed pair
with Holm among themselves (docs/statistics.md#the-gates-family-overall-first). When
attempts did not run, each group is also tested on the bound least favourable to the run,
where they could hide a regression
(docs/statistics.md#could-the-attempts-that-did-not-run-hide-a-regression). Only dev
cases are named.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Split
from soev_pipeline.core.stats import (
    ALPHA,
    PairedFigures,
    overall_first,
    paired_figures,
    verdict,
)
from soev_pipeline.project.paths import RunsDir

from .archive import VERDICTS, RunArchive, list_runs, naming
from .manifest import Manifest
from .results import (
    CaseChange,
    Comparison,
    GradedAttempt,
    PairedGroup,
    Reason,
    UnrunPair,
    UnrunTally,
)
from .unrun import INTERRUPTED, MAX_UNRUN, AttemptLedger, read_ledger, tally, too_many


@dataclass(frozen=True, slots=True)
class CaseAttempts:
    """One case of a run: where it belongs, its digest, and how its attempts went.

    `passes` holds whether each attempt that ran passed, in attempt order; `unrun` counts
    the attempts that did not run, and `unrun_at` gives their places in attempt order,
    from 0 (None: they are the last `unrun` attempts). `suite` and `split` are None for a
    case none of whose attempts was archived.
    """

    suite: str | None
    split: Split | None
    digest: str | None
    passes: tuple[bool, ...]
    unrun: int = 0
    seconds: float = 0.0
    unrun_at: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.unrun_at is not None and (
            len(self.unrun_at) != self.unrun
            or any(not 0 <= at < self.attempts for at in self.unrun_at)
        ):
            raise ValueError(f"unrun_at {self.unrun_at} does not place {self.unrun} attempts")

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

    def outcomes(self) -> tuple[bool | None, ...]:
        """Every attempt in attempt order: whether it passed, or None when it did not run."""
        gaps = set(
            range(len(self.passes), self.attempts) if self.unrun_at is None else self.unrun_at
        )
        ran = iter(self.passes)
        return tuple(None if at in gaps else next(ran) for at in range(self.attempts))

    def ran(self) -> tuple[int, ...]:
        """The places in attempt order, from 0, of the attempts that ran."""
        return tuple(at for at, passed in enumerate(self.outcomes()) if passed is not None)

    def bound(self, m: int, *, unrun_passed: bool) -> float:
        """The pass rate over the first `m` attempts (1 ≤ m ≤ attempts), those that did not
        run counted as passed when `unrun_passed`, else as failed."""
        head = self.outcomes()[:m]
        return sum(unrun_passed if passed is None else passed for passed in head) / m


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
            ran: list[bool] = []
            unrun_at: list[int] = []
            for place, attempt in enumerate(sorted({*attempts, *self.missing(case_id)})):
                if attempt in attempts and self.unrun_code(case_id, attempt) is None:
                    ran.append(attempts[attempt])
                else:
                    unrun_at.append(place)
            cases[case_id] = CaseAttempts(
                *self._place[case_id],
                manifest.cases.get(case_id),
                tuple(ran),
                len(unrun_at),
                ledger.seconds.get(case_id, 0.0) if ledger is not None else 0.0,
                tuple(unrun_at),
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
    runs_dir: RunsDir, manifest: Manifest, max_unrun: float
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
    runs_dir: RunsDir, manifest: Manifest, *, max_unrun: float = MAX_UNRUN
) -> RunArchive | None:
    """The newest earlier run of the same project that has a report and is not
    inconclusive by itself (more than `max_unrun` of its attempts did not run), or None.

    A run whose evidence does not read is passed over: it cannot say what ran.
    """
    found = _previous(runs_dir, manifest, max_unrun)
    return None if found is None else found[0]


def latest_run(runs_dir: RunsDir, project: str) -> RunArchive | None:
    """The newest run of `project` in `runs_dir` that has a report, or None."""
    for run, manifest in reversed(list_runs(runs_dir)):
        if manifest.project == project and run.latest_report_path() is not None:
            return run
    return None


def previous_attempts(runs_dir: RunsDir, manifest: Manifest) -> RunAttempts | None:
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


def paired_attempts(
    now: CaseAttempts, baseline: CaseAttempts
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The attempts of a case that a comparison pairs, by their places in each run: the
    first m that ran in each, m the smaller number that ran. The case's two rates in the
    comparison are the pass rates of these attempts."""
    m = min(len(now.passes), len(baseline.passes))
    return now.ran()[:m], baseline.ran()[:m]


class _Pair(NamedTuple):
    """A paired case and its two rates over the same attempts."""

    case_id: str
    suite: str
    split: Split
    now: float
    before: float


OVERALL = ("overall", "")
"""The key of the whole run among the groups of a comparison; the others are
(`suite`, name) and (`split`, name)."""

GroupKey = tuple[str, str]


class _Pairing(NamedTuple):
    like: list[_Pair]
    """Like with like: each case's first m attempts that ran in both runs."""
    bound: list[_Pair]
    """The bound least favourable to the run: each case's first m attempts, m the smaller
    number in the two runs, the run's attempts that did not run failed and the baseline's
    passed. It holds the cases without an attempt that ran in both too."""
    changed: int
    unpaired: int
    unrun: int


def _pairs(now: RunAttempts, baseline: RunAttempts) -> _Pairing:
    like: list[_Pair] = []
    bound: list[_Pair] = []
    changed = unpaired = unrun = 0
    for case_id in sorted(set(now.cases) | set(baseline.cases)):
        current, before = now.cases.get(case_id), baseline.cases.get(case_id)
        if current is None or before is None:
            unpaired += 1
            continue
        if current.digest is None or current.digest != before.digest:
            changed += 1
            continue
        suite, split = current.suite or before.suite, current.split or before.split
        if suite is None or split is None:
            unrun += 1
            continue
        if m := min(current.attempts, before.attempts):
            worst = current.bound(m, unrun_passed=False)
            bound.append(_Pair(case_id, suite, split, worst, before.bound(m, unrun_passed=True)))
        if (m := len(paired_attempts(current, before)[0])) == 0:
            unrun += 1
        else:
            like.append(_Pair(case_id, suite, split, current.first(m), before.first(m)))
    return _Pairing(like, bound, changed, unpaired, unrun)


def _members(pairs: list[_Pair], keys: Iterable[GroupKey]) -> dict[GroupKey, list[_Pair]]:
    members: dict[GroupKey, list[_Pair]] = {key: [] for key in keys}
    for pair in pairs:
        members[OVERALL].append(pair)
        members[("suite", pair.suite)].append(pair)
        members[("split", pair.split)].append(pair)
    return members


def _tested(
    members: Mapping[GroupKey, list[_Pair]],
) -> dict[GroupKey, tuple[PairedFigures, float]]:
    """Each group's figures and its p-value adjusted over the gate's family: overall first,
    then Holm over the other groups with a changed pair (`core.stats.overall_first`).

    Groups that hold the same pairs (a project with one suite, or the dev split only) are
    one hypothesis: they are tested once, and share the adjusted p-value.
    """
    figures = {
        key: paired_figures([p.now for p in g], [p.before for p in g]) for key, g in members.items()
    }
    cases = {key: frozenset(pair.case_id for pair in group) for key, group in members.items()}
    family = {cases[key]: f.p_value for key, f in figures.items() if f.changed}
    adjusted = overall_first(family, cases[OVERALL])
    return {key: (f, adjusted.get(cases[key], 1.0)) for key, f in figures.items()}


def _keys(pairs: Iterable[_Pair], suites: Sequence[str]) -> list[GroupKey]:
    """The groups of a comparison: overall, the suites in the run's order, the splits."""
    order = {name: index for index, name in enumerate(suites)}
    listed = list(pairs)
    named = sorted({p.suite for p in listed}, key=lambda name: (order.get(name, len(order)), name))
    splits = sorted({p.split for p in listed})
    return [OVERALL, *(("suite", name) for name in named), *(("split", name) for name in splits)]


def _had_unrun(run: RunAttempts) -> bool:
    return run.unrun.attempts > 0 or any(case.unrun for case in run.cases.values())


def compare_rates(
    now: RunAttempts,
    baseline: RunAttempts,
    *,
    alpha: float = ALPHA,
    max_unrun: float = MAX_UNRUN,
) -> Comparison:
    """Compare two runs of one project by their paired cases, like with like.

    The comparison is inconclusive, and so is every group's verdict, when more than
    `max_unrun` of either run's attempts did not run. When either run has an attempt that
    did not run, each group is also tested on the bound least favourable to `now`; a group
    whose bound regressed significantly, and whose comparison did not, is inconclusive.

    Raises:
        ProjectError: the runs belong to different projects.
    """
    if now.project != baseline.project:
        raise ProjectError(
            f"run {baseline.run_id!r} belongs to project {baseline.project!r}, "
            f"not {now.project!r}: only runs of one project compare"
        )
    pairing = _pairs(now, baseline)
    bounded = _had_unrun(now) or _had_unrun(baseline)
    keys = _keys([*pairing.like, *(pairing.bound if bounded else [])], now.suites)
    order = {key: index for index, key in enumerate(keys)}
    tested = _tested(_members(pairing.like, keys))
    worst = _tested(_members(pairing.bound, keys)) if bounded else {}
    inconclusive = now.inconclusive(max_unrun) or baseline.inconclusive(max_unrun)
    groups: dict[GroupKey, PairedGroup] = {}
    for key, (f, p_holm) in tested.items():
        found = verdict(f.delta, p_holm, alpha)
        reason: Reason | None = None
        bound, bound_p = worst.get(key, (None, None))
        if inconclusive:
            found, reason = "inconclusive", "too_many_unrun"
        elif (
            bound is not None
            and bound_p is not None
            and found != "regressed"
            and verdict(bound.delta, bound_p, alpha) == "regressed"
        ):
            found, reason = "inconclusive", "unrun_could_hide_regression"
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
            worst_case_delta=None if bound is None else bound.delta,
            worst_case_p_holm=bound_p,
            verdict=found,
            reason=reason,
        )
    changes = [
        CaseChange(
            case_id=pair.case_id,
            suite=pair.suite,
            pass_rate=pair.now,
            baseline_pass_rate=pair.before,
        )
        for pair in sorted(pairing.like, key=lambda pair: order[("suite", pair.suite)])
        if pair.split == "dev" and pair.now != pair.before
    ]
    return Comparison(
        run_id=now.run_id,
        baseline_id=baseline.run_id,
        alpha=alpha,
        changed_cases=pairing.changed,
        unpaired_cases=pairing.unpaired,
        unrun_cases=pairing.unrun,
        unrun=UnrunPair(run=now.unrun, baseline=baseline.unrun),
        inconclusive=inconclusive,
        overall=groups[OVERALL],
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
    attempts: Callable[[RunArchive], RunAttempts] | None = None,
) -> Comparison:
    """Compare the latest scorings of two runs (`soev-evals compare RUN BASELINE`).

    `attempts` reads a run's attempts (`read_attempts` when None): the viewer passes its
    cached reader, which also tells a case page which attempts were paired.

    Raises:
        ProjectError: a run is missing or unscored, the runs belong to different
            projects, or they share no case (and the comparison is not inconclusive,
            which says why on its own).
    """
    if run.run_id == baseline.run_id:
        raise ProjectError(f"run {run.run_id!r} cannot be its own baseline")
    read = attempts or read_attempts
    comparison = compare_rates(read(run), read(baseline), alpha=alpha, max_unrun=max_unrun)
    if comparison.overall.pairs == 0 and not comparison.inconclusive:
        raise ProjectError(
            f"runs {run.run_id!r} and {baseline.run_id!r} share no case with the same digest "
            f"and an attempt that ran in both ({comparison.changed_cases} changed, "
            f"{comparison.unpaired_cases} unpaired, {comparison.unrun_cases} without an "
            "attempt that ran)"
        )
    return comparison
