"""The items a probe run takes: judged criteria of dev replies, from the labels and a run.

An item is a `Target`: one judged criterion of one reply. The replies come from the
project's label lines (each labelled item; the labels themselves are not needed) and from
the attempts of a run, dev cases only: a test case is never read, let alone sent to the
judge. The same criterion of the same reply counts once. Each criterion then keeps a seeded
sample of `--items` of them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from soev_pipeline.calibration import criterion_name, criterion_of, read_project_labels
from soev_pipeline.calibration.judging import evidence_of, why_ungradable
from soev_pipeline.core.canonical import digest
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Case, Evidence
from soev_pipeline.project import LoadedProject
from soev_pipeline.run.archive import RunArchive

from .builders import Target, grades_reply


def _dev_cases(loaded: LoadedProject) -> dict[str, Case]:
    return {case.id: case for case in loaded.cases() if case.split == "dev"}


def _judged(loaded: LoadedProject, kind: str) -> bool:
    return kind in loaded.registry and loaded.registry.get(kind).needs_judge


def judged_criteria(loaded: LoadedProject) -> list[str]:
    """The names of the judged criteria of the dev cases that a probe can change (`kind`, or
    `kind#nth`), sorted."""
    names: set[str] = set()
    for case in _dev_cases(loaded).values():
        seen: dict[str, int] = defaultdict(int)
        for spec in case.criteria:
            nth = seen[spec.kind]
            seen[spec.kind] += 1
            if _judged(loaded, spec.kind) and grades_reply(spec):
                names.add(criterion_name(spec.kind, nth))
    return sorted(names)


def label_targets(loaded: LoadedProject) -> list[Target]:
    """A target for every labelled item of a judged criterion that can be graded from its
    label lines (not `compare.equivalent`, whose variants' replies a label does not hold)."""
    cases = _dev_cases(loaded)
    targets = []
    for item in read_project_labels(loaded).items:
        case = cases.get(item.case_id)
        spec = criterion_of(case, item.kind, item.nth) if case is not None else None
        if case is None or spec is None or why_ungradable(item) is not None:
            continue
        if _judged(loaded, spec.kind) and grades_reply(spec):
            targets.append(Target(item.name, case, spec, evidence_of(case, item.reply), "labels"))
    return targets


def _attempt_targets(loaded: LoadedProject, case: Case, evidence: Evidence) -> Iterable[Target]:
    seen: dict[str, int] = defaultdict(int)
    for spec in case.criteria:
        nth = seen[spec.kind]
        seen[spec.kind] += 1
        if _judged(loaded, spec.kind) and grades_reply(spec):
            yield Target(criterion_name(spec.kind, nth), case, spec, evidence, "run")


def run_targets(loaded: LoadedProject, archive: RunArchive) -> list[Target]:
    """A target for every judged criterion of every attempt of a dev case in the run that
    gave a final reply, graded as the case's criteria are now.

    Raises:
        ProjectError: the run's evidence does not read.
    """
    cases = _dev_cases(loaded)
    targets: list[Target] = []
    for evidence in archive.iter_attempts(warn=False):
        case = cases.get(evidence.case_id)
        if evidence.split != "dev" or case is None or evidence.reply is None:
            continue
        targets.extend(_attempt_targets(loaded, case, evidence))
    return targets


def select(
    targets: Iterable[Target],
    *,
    per_criterion: int,
    seed: int,
    criteria: Sequence[str] | None = None,
) -> dict[str, list[Target]]:
    """At most `per_criterion` targets of each criterion (of `criteria` when given), drawn
    with `seed`; the first of two targets with the same key is kept.

    The draw depends on the seed and on the set of targets, not on their order.
    """
    unique: dict[tuple[str, str, str], Target] = {}
    for target in targets:
        if criteria is None or target.name in criteria:
            unique.setdefault(target.key, target)
    by_name: dict[str, list[Target]] = defaultdict(list)
    for key in sorted(unique):
        by_name[key[0]].append(unique[key])
    chosen: dict[str, list[Target]] = {}
    for name, found in sorted(by_name.items()):
        draw = random.Random(int(digest([seed, name])[:16], 16))
        picked = sorted(draw.sample(range(len(found)), min(per_criterion, len(found))))
        chosen[name] = [found[index] for index in picked]
    return chosen


def check_criteria(loaded: LoadedProject, names: Sequence[str]) -> None:
    """Raise a one-line `ProjectError` for a name that is not a judged criterion of the
    project's dev cases.

    Raises:
        ProjectError: a name is not among `judged_criteria(loaded)`.
    """
    known = judged_criteria(loaded)
    unknown = [name for name in names if name not in known]
    if unknown:
        listed = ", ".join(known) or "none"
        raise ProjectError(
            f"{loaded.path}: --criteria: {', '.join(map(repr, unknown))} is not a judged "
            f"criterion of the dev cases (judged criteria: {listed})"
        )


def counts_by_source(chosen: Mapping[str, Sequence[Target]]) -> dict[str, int]:
    """How many chosen targets came from the labels, and how many from the run."""
    counts = {"labels": 0, "run": 0}
    for targets in chosen.values():
        for target in targets:
            counts[target.source] += 1
    return counts
