"""Compare two runs of a project case by case (SPEC.md section 10).

Each run contributes the pass rate of every case its latest scoring graded, test cases
included; a case is paired when both runs graded it with the same case digest. Groups are
the whole run, each suite and each split. Only dev cases are ever named.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Split
from soev_pipeline.core.stats import ALPHA, holm, paired_figures, verdict

from .archive import VERDICTS, RunArchive, list_runs
from .manifest import Manifest
from .results import CaseChange, Comparison, GradedAttempt, PairedGroup


@dataclass(frozen=True, slots=True)
class CaseRate:
    """One case of a run: where it belongs, its digest, and its pass rate over its attempts."""

    suite: str
    split: Split
    digest: str | None
    rate: float


@dataclass(frozen=True)
class RunRates:
    """The case rates of one scoring of a run, with the run's suite order."""

    run_id: str
    project: str
    suites: tuple[str, ...]
    cases: Mapping[str, CaseRate]


def rates_from_graded(manifest: Manifest, graded: Iterable[GradedAttempt]) -> RunRates:
    """The case rates of a scoring from its graded attempts."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    place: dict[str, tuple[str, Split]] = {}
    for attempt in graded:
        tally = counts[attempt.case_id]
        tally[0] += int(attempt.passed)
        tally[1] += 1
        place[attempt.case_id] = (attempt.suite, attempt.split)
    return _rates(manifest, counts, place)


def _rates(
    manifest: Manifest,
    counts: Mapping[str, Sequence[int]],
    place: Mapping[str, tuple[str, Split]],
) -> RunRates:
    cases = {
        case_id: CaseRate(*place[case_id], manifest.cases.get(case_id), passed / total)
        for case_id, (passed, total) in counts.items()
    }
    return RunRates(manifest.run_id, manifest.project, manifest.suites, cases)


def read_rates(archive: RunArchive) -> RunRates:
    """The case rates of the run's latest scoring that has a report.

    Raises:
        ProjectError: the run does not exist or has no scoring yet, or a line of its
            verdicts does not read.
    """
    manifest = archive.manifest()
    report = archive.latest_report_path()
    if report is None:
        raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring yet")
    path = report.parent / VERDICTS
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    place: dict[str, tuple[str, Split]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                case_id, passed = raw["case_id"], bool(raw["passed"])
                place[case_id] = (raw["suite"], raw["split"])
            except (ValueError, KeyError, TypeError):
                raise ProjectError(f"{path}: line {number}: not a graded attempt") from None
            tally = counts[case_id]
            tally[0] += int(passed)
            tally[1] += 1
    return _rates(manifest, counts, place)


def previous_run(runs_dir: Path, manifest: Manifest) -> RunArchive | None:
    """The newest earlier run of the same project that has a report, or None."""
    earlier = [
        run
        for run, other in list_runs(runs_dir)
        if run.run_id != manifest.run_id
        and other.project == manifest.project
        and other.created_at < manifest.created_at
    ]
    for run in reversed(earlier):
        if run.latest_report_path() is not None:
            return run
    return None


def latest_run(runs_dir: Path, project: str) -> RunArchive | None:
    """The newest run of `project` in `runs_dir` that has a report, or None."""
    for run, manifest in reversed(list_runs(runs_dir)):
        if manifest.project == project and run.latest_report_path() is not None:
            return run
    return None


def previous_rates(runs_dir: Path, manifest: Manifest) -> RunRates | None:
    """The case rates of the previous run (see `previous_run`), or None.

    A previous run whose scoring no longer reads is passed over with None, so that it
    cannot stop the aggregation of a new run.
    """
    run = previous_run(runs_dir, manifest)
    if run is None:
        return None
    try:
        return read_rates(run)
    except (ProjectError, OSError):
        return None


def _group(
    now: Sequence[float], before: Sequence[float], alpha: float, p_holm: float | None = None
) -> PairedGroup:
    figures = paired_figures(now, before)
    p = figures.p_value if p_holm is None else p_holm
    return PairedGroup(
        pairs=figures.pairs,
        pass_rate=figures.pass_rate,
        baseline_pass_rate=figures.baseline_pass_rate,
        delta=figures.delta,
        stderr=figures.stderr,
        ci95=figures.ci95,
        improved=figures.improved,
        regressed=figures.regressed,
        unchanged=figures.unchanged,
        p_value=figures.p_value,
        p_holm=p_holm,
        verdict=verdict(figures.delta, p, alpha),
    )


def compare_rates(now: RunRates, baseline: RunRates, *, alpha: float = ALPHA) -> Comparison:
    """Compare two runs of one project by their paired cases.

    Raises:
        ProjectError: the runs belong to different projects.
    """
    if now.project != baseline.project:
        raise ProjectError(
            f"run {baseline.run_id!r} belongs to project {baseline.project!r}, "
            f"not {now.project!r}: only runs of one project compare"
        )
    paired: list[tuple[str, CaseRate, CaseRate]] = []
    changed = unpaired = 0
    for case_id in sorted(set(now.cases) | set(baseline.cases)):
        current, before = now.cases.get(case_id), baseline.cases.get(case_id)
        if current is None or before is None:
            unpaired += 1
        elif current.digest is None or current.digest != before.digest:
            changed += 1
        else:
            paired.append((case_id, current, before))
    order = {name: index for index, name in enumerate(now.suites)}
    paired.sort(key=lambda pair: (order.get(pair[1].suite, len(order)), pair[1].suite, pair[0]))

    def rates(
        selected: Iterable[tuple[str, CaseRate, CaseRate]],
    ) -> tuple[list[float], list[float]]:
        chosen = list(selected)
        return [c.rate for _, c, _ in chosen], [b.rate for _, _, b in chosen]

    suite_names = list(dict.fromkeys(current.suite for _, current, _ in paired))
    by_suite = {name: rates(p for p in paired if p[1].suite == name) for name in suite_names}
    raw = {name: paired_figures(*by_suite[name]).p_value for name in suite_names}
    adjusted = holm(raw)
    splits = sorted({current.split for _, current, _ in paired})
    changes = [
        CaseChange(
            case_id=case_id,
            suite=current.suite,
            pass_rate=current.rate,
            baseline_pass_rate=before.rate,
        )
        for case_id, current, before in paired
        if current.split == "dev" and current.rate != before.rate
    ]
    return Comparison(
        run_id=now.run_id,
        baseline_id=baseline.run_id,
        alpha=alpha,
        changed_cases=changed,
        unpaired_cases=unpaired,
        overall=_group(*rates(paired), alpha),
        suites={name: _group(*by_suite[name], alpha, adjusted[name]) for name in suite_names},
        splits={
            split: _group(*rates(p for p in paired if p[1].split == split), alpha)
            for split in splits
        },
        regressions=tuple(c for c in changes if c.pass_rate < c.baseline_pass_rate),
        improvements=tuple(c for c in changes if c.pass_rate > c.baseline_pass_rate),
    )


def compare_runs(run: RunArchive, baseline: RunArchive, *, alpha: float = ALPHA) -> Comparison:
    """Compare the latest scorings of two runs (`soev-evals compare RUN BASELINE`).

    Raises:
        ProjectError: a run is missing or unscored, the runs belong to different
            projects, or they share no case.
    """
    if run.run_id == baseline.run_id:
        raise ProjectError(f"run {run.run_id!r} cannot be its own baseline")
    comparison = compare_rates(read_rates(run), read_rates(baseline), alpha=alpha)
    if comparison.overall.pairs == 0:
        raise ProjectError(
            f"runs {run.run_id!r} and {baseline.run_id!r} share no case with the same digest "
            f"({comparison.changed_cases} changed, {comparison.unpaired_cases} unpaired)"
        )
    return comparison
