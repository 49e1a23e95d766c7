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

from collections.abc import Callable, Iterable, Mapping, Sequence
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

from .archive import RunArchive
from .results import (
    CaseChange,
    Comparison,
    PairedGroup,
    Reason,
    UnrunPair,
)
from .run_attempts import CaseAttempts, RunAttempts, read_attempts
from .unrun import MAX_UNRUN


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
