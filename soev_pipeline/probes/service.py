"""Probe the judge, as one function (docs/judge.md#is-the-judge-fooled-probes).

`probe_judge` gathers the items (labelled replies and a run's dev attempts), draws a seeded
sample per judged criterion, grades each item as it is and as every probe changed it, with
the project's judge and prompts, exactly as grading a run would (through the registry, so
the judge cache serves both), counts the verdicts that moved, and saves what it found for
the viewer (`saved`). The `probe-judge` command and the `judge_probes` asset both come
through here.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from soev_pipeline.calibration import calibration_judge, is_judged
from soev_pipeline.calibration.judging import prompt_digests
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Verdict
from soev_pipeline.core.ports import Judge, ReportsStats
from soev_pipeline.project import LoadedProject, probes_file
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.manifest import check_same_project
from soev_pipeline.run.run_attempts import latest_run

from .builders import PROBES, Probe, Probed, Target, generator
from .items import check_criteria, counts_by_source, label_targets, run_targets, select
from .results import CriterionProbes, ProbeFigures, ProbeReport
from .saved import SavedProbing, SavedTrial, options_of, save_probing, trial_id
from .texts import Texts

DEFAULT_ITEMS = 20
"""Items per criterion when `--items` is not given: five probes of 20 items of three judged
criteria are about 300 judge requests, small enough for a nightly."""


@dataclass(frozen=True)
class Trial:
    """One probe of one item: the original verdict, and the probed one (None when it was not
    asked: the original verdict was already a judge error)."""

    target: Target
    probe: Probe
    probed: Probed
    original: Verdict
    verdict: Verdict | None

    @property
    def statuses(self) -> tuple[str, str]:
        return self.original.status, "error" if self.verdict is None else self.verdict.status

    @property
    def flipped(self) -> bool:
        before, after = self.statuses
        return {before, after} == {"pass", "fail"}

    def saved(self) -> SavedTrial:
        """The trial as the probing file keeps it.

        Raises:
            RuntimeError: the item is of a test case, which must never reach a probe.
        """
        target = self.target
        if target.case.split != "dev":
            raise RuntimeError(f"case {target.case.id!r} is not a dev case: never probed")
        options = options_of(target.spec)
        probed_options = options_of(self.probed.spec)
        changed = options != probed_options
        return SavedTrial(
            id=trial_id(target, self.probe.name),
            criterion=target.name,
            case_id=target.case.id,
            source=target.source,
            attempt=target.evidence.attempt if target.source == "run" else None,
            probe=self.probe.name,
            kind=self.probe.kind,
            reply=target.reply,
            probed_reply=self.probed.reply,
            options=options if changed else None,
            probed_options=probed_options if changed else None,
            original=self.original,
            probed=self.verdict,
        )


@dataclass(frozen=True)
class Probing:
    """What one probe run found: the report, every trial, and where the items came from
    (`run_id`: the run whose attempts were drawn from, if any; `sources`: items by source)."""

    report: ProbeReport
    trials: tuple[Trial, ...] = ()
    run_id: str | None = None
    sources: dict[str, int] = field(default_factory=dict)


async def _grade(
    loaded: LoadedProject, jobs: Sequence[tuple[Target, Probed]], judge: Judge
) -> list[Verdict]:
    ctx = replace(loaded.context, judge=judge)
    return list(
        await asyncio.gather(
            *(
                loaded.registry.evaluate(probed.spec, target.case, probed.evidence, ctx)
                for target, probed in jobs
            )
        )
    )


async def probe_targets(
    loaded: LoadedProject,
    chosen: Mapping[str, Sequence[Target]],
    judge: Judge,
    prompts: Mapping[str, str],
    *,
    seed: int,
    texts: Texts,
) -> tuple[dict[str, CriterionProbes], list[Trial]]:
    """Grade every chosen target as it is, build its probes, grade those, and count.

    A target whose criterion does not apply is left out; a sensitivity probe is built only
    for a target the judge passed; a target whose own verdict is an error is not probed
    (each of its probes counts as a judge error).
    """
    flat = [target for targets in chosen.values() for target in targets]
    originals = await _grade(loaded, [(t, Probed(t.spec, t.evidence)) for t in flat], judge)
    planned: list[tuple[Target, Probe, Probed, Verdict]] = []
    digests: dict[str, dict[str, str]] = defaultdict(dict)
    for target, original in zip(flat, originals, strict=True):
        if original.status == "not_applicable" or not is_judged(original):
            continue
        digests[target.name].update(prompt_digests(target.spec, original, prompts))
        passed = original.status == "pass"
        for probe in PROBES:
            if probe.kind == "sensitivity" and original.status == "fail":
                continue
            probed = probe.build(target, texts, generator(seed, target, probe.name), passed)
            if probed is not None:
                planned.append((target, probe, probed, original))
    asked = [
        (target, probed) for target, _, probed, original in planned if original.status != "error"
    ]
    answers = iter(await _grade(loaded, asked, judge))
    trials = [
        Trial(
            target, probe, probed, original, next(answers) if original.status != "error" else None
        )
        for target, probe, probed, original in planned
    ]
    by_probe: dict[str, dict[str, list[Trial]]] = defaultdict(lambda: defaultdict(list))
    for trial in trials:
        by_probe[trial.target.name][trial.probe.name].append(trial)
    criteria = {
        name: CriterionProbes(
            prompt_sha256=dict(sorted(digests[name].items())),
            probes={
                probe.name: ProbeFigures.of(
                    probe.kind, (trial.statuses for trial in by_probe[name][probe.name])
                )
                for probe in PROBES
                if by_probe[name][probe.name]
            },
        )
        for name in chosen
        if name in digests
    }
    return criteria, trials


def _run(loaded: LoadedProject, runs_dir: RunsDir, run_id: str | None) -> RunArchive | None:
    if run_id is None:
        return latest_run(runs_dir, loaded.project.name)
    archive = RunArchive(runs_dir, run_id)
    check_same_project(archive.manifest(), loaded.project.name)
    return archive


async def probe_judge(
    loaded: LoadedProject,
    state: Path,
    runs_dir: RunsDir,
    *,
    run_id: str | None = None,
    criteria: Sequence[str] | None = None,
    items: int = DEFAULT_ITEMS,
    seed: int = 0,
    offline: bool = False,
) -> Probing:
    """Probe the project's judge on at most `items` items per judged criterion.

    The items are the labelled replies and the dev attempts of the run `run_id` (by
    default the latest run of the project that has a report, if any). With nothing to
    probe, the judge is not opened. What it finds replaces the project's last probing in
    `state` (`probes_file`), which the viewer shows.

    Raises:
        ProjectError: a name of `criteria` is not a judged criterion; the run is missing
            or of another project; there is no judge; the probing file cannot be written;
            see also `calibration_judge`.
        ArmError, JudgeError: the runtime provider could not open.
    """
    if criteria:
        check_criteria(loaded, criteria)
    archive = _run(loaded, runs_dir, run_id)
    targets = label_targets(loaded)
    if archive is not None:
        targets += run_targets(loaded, archive)
    chosen = select(targets, per_criterion=items, seed=seed, criteria=criteria or None)
    found_run = archive.run_id if archive is not None else None
    probing = Probing(ProbeReport(criteria={}, judge_calls=0, cache_hits=0), (), found_run, {})
    if chosen:
        probing = await _probe(loaded, state, chosen, found_run, seed=seed, offline=offline)
    saved = SavedProbing(
        project=loaded.project.name,
        probed_at=datetime.now(UTC),
        prompts_version=loaded.prompts_version,
        run_id=probing.run_id,
        sources=probing.sources,
        items=items,
        seed=seed,
        criteria=tuple(criteria) if criteria else None,
        offline=offline,
        report=probing.report,
        trials=tuple(trial.saved() for trial in probing.trials),
    )
    save_probing(probes_file(state, loaded.project.name), saved)
    return probing


async def _probe(
    loaded: LoadedProject,
    state: Path,
    chosen: Mapping[str, Sequence[Target]],
    run_id: str | None,
    *,
    seed: int,
    offline: bool,
) -> Probing:
    texts = Texts.of(loaded.project.probes.texts)
    async with calibration_judge(loaded, state, offline=offline) as (judge, prompts):
        if judge is None:
            raise ProjectError(
                f"{loaded.path}: judge: there is no judge to probe: the project has no "
                "judge: section, and its runtime provider gives none"
            )
        figures, trials = await probe_targets(
            loaded, chosen, judge, prompts, seed=seed, texts=texts
        )
        stats = judge.stats_dict() if isinstance(judge, ReportsStats) else {}
    report = ProbeReport(
        criteria=figures,
        judge_calls=_count(stats.get("calls")),
        cache_hits=_count(stats.get("cache_hits")),
    )
    return Probing(report, tuple(trials), run_id, counts_by_source(chosen))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) else None
