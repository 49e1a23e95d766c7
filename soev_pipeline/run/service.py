"""The four operations of a run as plain functions: load, attempt, grade and aggregate.

The Dagster assets and the CLI call these; nothing here imports dagster.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Case, Split
from soev_pipeline.core.ports import CriterionContext, Judge, LanguageDetector
from soev_pipeline.judges.language import LazyLangidDetector
from soev_pipeline.project import LoadedProject
from soev_pipeline.runtime import BUILTIN, RuntimeBindings

from .archive import SCORING, RunArchive, write_json_atomically
from .attempts import AttemptStats, plan_attempts, run_attempts, select_cases
from .compare import previous_attempts
from .grading import grade_evidence, iter_graded
from .heap import frozen_heap
from .manifest import Manifest, build_manifest, check_resumable, check_same_project
from .progress import Progress
from .report import build_report, hand_over, write_report
from .results import GradingSummary, Report
from .unrun import read_ledger


@dataclass(frozen=True)
class RunSelection:
    """What a run evaluates: suites (all when empty), split (both when None) and k."""

    suites: tuple[str, ...] = ()
    split: Split | None = None
    k: int = 1

    def check(self, loaded: LoadedProject) -> None:
        known = [suite.name for suite in loaded.suites]
        for name in self.suites:
            if name not in known:
                raise ProjectError(
                    f"{loaded.path}: suites: no suite {name!r} (known: {', '.join(known)})"
                )
        if self.k < 1:
            raise ProjectError(f"k must be at least 1, not {self.k}")


@dataclass
class PreparedRun:
    """A run ready for its attempt phase."""

    archive: RunArchive
    manifest: Manifest
    cases: list[Case]
    plan: list[tuple[Case, int]]
    resumed: bool = False
    already_done: int = 0
    notes: list[str] = field(default_factory=list)


def prepare_run(
    loaded: LoadedProject,
    runs_dir: Path,
    run_id: str,
    selection: RunSelection,
    *,
    resume: bool = False,
    runtime: str | None = None,
) -> PreparedRun:
    """Create the run's archive, or reopen it for `resume`, and plan the missing attempts.

    Raises:
        ProjectError: the run exists and `resume` is false, or it does not exist and
            `resume` is true, or it belongs to another project.
        ResumeError: the cases or prompts changed since the run started.
    """
    archive = RunArchive(runs_dir, run_id)
    shas = loaded.prompt_shas
    if resume:
        manifest = archive.manifest()
        check_same_project(manifest, loaded.project.name)
        selected = RunSelection(manifest.suites, manifest.split, manifest.k)
        selected.check(loaded)
        cases = select_cases(loaded.cases(), suites=manifest.suites, split=manifest.split)
        check_resumable(manifest, cases, shas)
        done = archive.completed()
        plan = plan_attempts(cases, manifest.k, done)
        return PreparedRun(archive, manifest, cases, plan, resumed=True, already_done=len(done))
    if archive.exists():
        raise ProjectError(
            f"{archive.path}: run {run_id!r} already exists; resume it with --resume {run_id}"
        )
    selection.check(loaded)
    suites = selection.suites or tuple(suite.name for suite in loaded.suites)
    cases = select_cases(loaded.cases(), suites=suites, split=selection.split)
    if not cases:
        where = f"split {selection.split!r} of " if selection.split else ""
        raise ProjectError(f"{loaded.path}: {where}the selected suites have no case")
    manifest = build_manifest(
        run_id=run_id,
        project=loaded.project.name,
        suites=suites,
        split=selection.split,
        k=selection.k,
        cases=cases,
        shas=shas,
        runtime=runtime,
    )
    archive.create(manifest)
    return PreparedRun(archive, manifest, cases, plan_attempts(cases, selection.k))


async def attempt_run(
    loaded: LoadedProject,
    prepared: PreparedRun,
    bindings: RuntimeBindings,
    *,
    progress: Callable[[int, int, int], None] | None = None,
) -> AttemptStats:
    """Run the planned attempts of `prepared` with the runtime's arm, archiving as they end."""
    if bindings.arm is None:
        raise ProjectError("the runtime provider gave no arm for the run command")
    with frozen_heap(), prepared.archive.evidence_writer() as writer:
        return await run_attempts(
            prepared.plan,
            bindings.arm,
            writer,
            messages=loaded.project.messages,
            concurrency=loaded.project.system.concurrency,
            setup=bindings.setup or loaded.setup,
            progress=progress,
        )


@dataclass(frozen=True)
class AttemptedRun:
    """A run's attempt phase, done: what was planned and how it went."""

    prepared: PreparedRun
    stats: AttemptStats


async def attempt_selected(
    loaded: LoadedProject,
    runs_dir: Path,
    run_id: str,
    selection: RunSelection,
    bindings: RuntimeBindings,
    *,
    resume: bool,
    runtime: str | None,
    progress: Progress,
) -> AttemptedRun:
    """The attempt operation: create (or reopen, with `resume`) the run and run its missing
    attempts. The `attempt` step and the CLI's head start both call this; the caller holds
    the run's lock."""
    prepared = prepare_run(
        loaded, runs_dir, run_id, selection, resume=resume, runtime=runtime or BUILTIN
    )
    progress.phase(f"{len(prepared.plan)} attempts to run")
    stats = await attempt_run(loaded, prepared, bindings, progress=progress.attempts)
    return AttemptedRun(prepared, stats)


async def grade_run(
    loaded: LoadedProject,
    archive: RunArchive,
    *,
    judge: Judge | None,
    language_detector: LanguageDetector | None = None,
    offline: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Path, GradingSummary]:
    """Grade the run's archived evidence with the current criteria into a new scoring."""
    manifest = archive.manifest()
    check_same_project(manifest, loaded.project.name)
    ctx = CriterionContext(
        messages=loaded.context.messages,
        rubrics=loaded.context.rubrics,
        corpus=loaded.context.corpus,
        judge=judge,
        language_detector=language_detector or LazyLangidDetector(),
    )
    if ctx.corpus is not None:
        warm = getattr(ctx.corpus, "warm", None)
        if callable(warm):
            await asyncio.to_thread(warm)
    scoring_dir = archive.new_scoring()
    try:
        total = archive.count_evidence()
        with frozen_heap():
            summary = await grade_evidence(
                loaded,
                ctx,
                archive.iter_evidence(),
                scoring_dir,
                total=total,
                prompts=loaded.prompt_shas,
                offline=offline,
                progress=progress,
            )
    except BaseException:
        # a grading that did not finish (damaged evidence, Ctrl-C) leaves no scoring behind
        shutil.rmtree(scoring_dir, ignore_errors=True)
        raise
    finally:
        # the indexes serve grading only: their memory goes before the report is built
        drop = getattr(ctx.corpus, "drop_indexes", None)
        if callable(drop):
            drop()
    stats = getattr(judge, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        summary = summary.model_copy(update={"judge": stats.as_dict()})
        write_json_atomically(scoring_dir / SCORING, summary.model_dump(mode="json"))
    return scoring_dir, summary


def aggregate_run(archive: RunArchive, scoring_dir: Path, *, write: bool = True) -> Report:
    """Aggregate a scoring into its report, with the comparison to the previous run.

    With `write`, the report is written to the scoring folder; the Dagster IO manager
    writes it itself. The case list is handed over (`report.hand_over`) to the next
    `read_report` of this scoring in this process, which prints it without reading the
    verdicts again.
    """
    manifest = archive.manifest()
    scoring = GradingSummary.model_validate_json((scoring_dir / SCORING).read_bytes())
    previous = previous_attempts(archive.runs_dir, manifest)
    ledger = read_ledger(archive, manifest)
    with frozen_heap():
        graded = iter_graded(scoring_dir)
        report = build_report(manifest, graded, scoring=scoring, previous=previous, ledger=ledger)
    hand_over(scoring_dir, manifest.suites, report.cases)
    if write:
        write_report(scoring_dir, report)
    return report
