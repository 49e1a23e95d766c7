"""The steps of a run as plain functions: attempt, grade, aggregate (and publish).

`soev_pipeline.api` runs them in that order for the CLI and for library users; the Dagster
assets run the same functions one step each. Every step takes the run's lock itself, so
whichever front end calls it, a run is never worked on by two commands at once. Nothing
here imports dagster.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from soev_pipeline.core.errors import ProjectError, UnreachableSystemError
from soev_pipeline.core.models import Case, Split
from soev_pipeline.core.ports import CriterionContext, Judge, LanguageDetector, ReportsStats
from soev_pipeline.judges.language import LazyLangidDetector
from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.runtime import BUILTIN, RuntimeBindings

from .archive import REPORT, SCORING, SCORINGS, VERDICTS, RunArchive, write_json_atomically
from .attempts import (
    FIRST_ATTEMPTS,
    AttemptStats,
    FirstAttemptsFailed,
    plan_attempts,
    plan_retries,
    run_attempts,
    select_cases,
)
from .grading import MAX_CHUNK, grade_evidence, iter_graded
from .manifest import Manifest, build_manifest, check_resumable, check_same_project
from .progress import Progress
from .report import ReportFold, write_report
from .results import GradingSummary, Report
from .run_attempts import PreviousAhead, RunAttempts, previous_attempts
from .stream import ArchivedStream
from .unrun import AttemptLedger, read_ledger

MAX_K = 1000
"""The most attempts per case a run may ask for: more is a typo, not an evaluation."""


@dataclass(frozen=True)
class RunSelection:
    """What a run evaluates: suites (all when empty), split (both when None) and k."""

    suites: tuple[str, ...] = ()
    split: Split | None = None
    k: int = 1

    def check(self, loaded: LoadedProject) -> None:
        """Refuse an unknown suite or a k out of bounds, before anything is archived.

        Raises:
            ProjectError: the message names the project file and the field.
        """
        known = [suite.name for suite in loaded.suites]
        for name in self.suites:
            if name not in known:
                raise ProjectError(
                    f"{loaded.path}: suites: no suite {name!r} (known: {', '.join(known)})"
                )
        if not 1 <= self.k <= MAX_K:
            raise ProjectError(f"k must be between 1 and {MAX_K}, not {self.k}")


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
    runs_dir: RunsDir,
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
            f"{archive.location}: run {run_id!r} already exists; resume it with --resume {run_id}"
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


@dataclass(frozen=True)
class AttemptedRun:
    """A run's attempt phase, done: what was planned and how it went."""

    prepared: PreparedRun
    stats: AttemptStats


async def attempt(
    loaded: LoadedProject,
    runs_dir: RunsDir,
    run_id: str,
    selection: RunSelection,
    bindings: RuntimeBindings,
    *,
    resume: bool | None = False,
    runtime: str | None = None,
    progress: Progress | None = None,
    retry_unrun: bool | None = None,
    stream: ArchivedStream | None = None,
) -> AttemptedRun:
    """The attempt step: create the run (or reopen it to resume) and run its missing attempts.

    `stream`, when given, gets every attempt of a new run as it is archived (opened once
    the run is created; abandoned when the run is resumed, or runs attempts once more).

    Each attempt is archived as it finishes. `resume` None resumes when the run is archived
    already and starts it otherwise (what a re-executed Dagster run needs); True requires
    an archived run, False refuses one. Holds the run's lock throughout.

    The run's edges (docs/runs.md#a-run-that-cannot-reach-the-assistant): when the first
    min(20, planned) attempts all fail the same way before any reply (an HTTP status other
    than 429 and 5xx, or no connection), the step stops, archiving none of them, and the
    run stays resumable. After the others, the attempts of the run that did not run are run
    once more, unless `retry_unrun` (None: the project's `system.retry_unrun`) is false;
    their new lines replace the old ones (`RunArchive.iter_attempts`).

    Raises:
        ProjectError: the selection is invalid, the run exists (or not, for a resume), or
            the runtime gave no arm.
        ResumeError: the cases or prompts changed since the run started.
        RunLockedError: another command works on the run.
        UnreachableSystemError: the first attempts all failed the same way before any reply.
    """
    progress = progress or Progress()
    archive = RunArchive(runs_dir, run_id)
    if resume is None:
        resume = archive.exists()
    elif resume:
        archive.manifest()  # a clear error when there is nothing to resume
    if bindings.arm is None:
        raise ProjectError("the runtime provider gave no arm for the run command")
    arm = bindings.arm
    system = loaded.project.system
    retry = system.retry_unrun if retry_unrun is None else retry_unrun
    with archive.locked("resume" if resume else "run"):
        progress.started("attempt")
        prepared = prepare_run(
            loaded, runs_dir, run_id, selection, resume=resume, runtime=runtime or BUILTIN
        )
        progress.phase(f"{len(prepared.plan)} attempts to run")
        if stream is not None:
            if prepared.resumed:
                stream.abandon()
            else:
                stream.open(
                    len(prepared.plan), min(system.concurrency, MAX_CHUNK), prepared.manifest
                )
        with prepared.archive.evidence_writer() as writer:

            async def run(plan: list[tuple[Case, int]], first: int = 0) -> AttemptStats:
                return await run_attempts(
                    plan,
                    arm,
                    writer,
                    messages=loaded.project.messages,
                    concurrency=system.concurrency,
                    setup=bindings.setup or loaded.setup,
                    progress=progress.attempts,
                    first=first,
                    archived=None if stream is None else stream.archived,
                )

            try:
                stats = await run(prepared.plan, FIRST_ATTEMPTS)
            except FirstAttemptsFailed as failed:
                raise UnreachableSystemError(
                    failed.reason,
                    failed.attempts,
                    failed.detail,
                    base_url=system.url,
                    run_id=run_id,
                    where=str(loaded.path),
                ) from None
            again = retries(prepared) if retry and (stats.failed or prepared.resumed) else []
            if again:
                if stream is not None:
                    stream.abandon()
                progress.phase(f"{len(again)} attempts did not run; running them once more")
                retried = await run(again)
                stats.finished += retried.finished
                stats.failed += retried.failed
                stats.retried = len(again)
    return AttemptedRun(prepared, stats)


def retries(prepared: PreparedRun) -> list[tuple[Case, int]]:
    """The attempts of the run that did not run, as its evidence says now: each to run once
    more (`attempts.plan_retries`)."""
    ledger = read_ledger(prepared.archive, prepared.manifest)
    return plan_retries(prepared.cases, prepared.manifest.k, ledger.unrun)


class NotTheArchive(Exception):
    """A streamed grading did not grade the archive's attempts in the archive's order: its
    scoring is dropped, and the run is graded after its attempts."""


@dataclass(frozen=True)
class Scoring:
    """One grading of a run's evidence: its (local) folder, its summary, and where the
    archive keeps it (a path or a URL, for people).

    A scoring graded in this command also holds its report folded as its verdicts were
    written (`fold`) and, when the attempts were graded as they were archived, the run's
    ledger folded from them (`ledger`): the aggregate step then reads neither its verdicts
    nor the evidence back; and the previous run's attempts, read while the attempts ran
    (`previous`, see `read_previous_ahead`), which it reads again only if a run changed.
    """

    path: Path
    summary: GradingSummary
    location: str = ""
    fold: ReportFold | None = field(default=None, repr=False, compare=False)
    ledger: AttemptLedger | None = field(default=None, repr=False, compare=False)
    previous: PreviousAhead | None = field(default=None, repr=False, compare=False)

    @classmethod
    def read(cls, archive: RunArchive, path: Path) -> Scoring:
        """The scoring of `archive` in the folder `path`."""
        summary = GradingSummary.model_validate_json((path / SCORING).read_bytes())
        return cls(path, summary, archive.where(f"{SCORINGS}/{path.name}"))


async def grade(
    loaded: LoadedProject,
    archive: RunArchive,
    *,
    judge: Judge | None,
    language_detector: LanguageDetector | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    arriving: ArchivedStream | None = None,
) -> Scoring:
    """The grade step: grade the run's archived evidence with the current criteria into a
    new scoring. Holds the run's lock; a grading that does not finish leaves no scoring.

    With `arriving` (opened), it grades the attempts of that stream as they are archived
    instead, and finishes when the stream is closed (`attempt_and_grade`).

    Raises:
        ProjectError: the run does not exist, belongs to another project, or its evidence
            is damaged.
        RunLockedError: another command works on the run.
    """
    progress = progress or Progress()
    with archive.locked("rescore"):
        manifest = archive.manifest()
        check_same_project(manifest, loaded.project.name)
        context = loaded.context
        ctx = CriterionContext(
            messages=context.messages,
            rubrics=context.rubrics,
            corpus=context.corpus,
            judge=judge,
            language_detector=language_detector or LazyLangidDetector(),
        )
        if arriving is None:
            progress.started("grade")
            progress.phase("grading")
        else:  # may wait for start-up work on a thread: the attempts go on meanwhile
            await asyncio.to_thread(progress.started, "grade")
        if ctx.corpus is not None:
            # built once before grading: forked grading workers then share them
            await asyncio.to_thread(ctx.corpus.warm)
        scoring_dir = archive.new_scoring()
        fold = ReportFold()
        try:
            if arriving is None:
                summary = await grade_evidence(
                    loaded,
                    ctx,
                    archive.iter_attempts(),
                    scoring_dir,
                    total=archive.count_attempts(),
                    prompts=loaded.prompt_shas,
                    offline=offline,
                    progress=progress.graded,
                    written=fold.add_line,
                )
            else:
                summary = await grade_evidence(
                    loaded,
                    ctx,
                    arriving,
                    scoring_dir,
                    total=arriving.total,
                    prompts=loaded.prompt_shas,
                    offline=offline,
                    max_chunk=arriving.chunk,
                    written=fold.add_line,
                )
                if arriving.abandoned or archive.attempt_keys() != arriving.keys:
                    raise NotTheArchive
            if isinstance(judge, ReportsStats):
                summary = summary.model_copy(update={"judge": judge.stats_dict()})
                write_json_atomically(scoring_dir / SCORING, summary.model_dump(mode="json"))
            archive.commit(scoring_dir, (VERDICTS, SCORING))
        except BaseException:
            archive.discard(scoring_dir)
            raise
        finally:
            if ctx.corpus is not None:
                ctx.corpus.drop_indexes()  # their memory goes before the report is built
    return Scoring(scoring_dir, summary, archive.where(f"{SCORINGS}/{scoring_dir.name}"), fold=fold)


@dataclass(frozen=True)
class Aggregated:
    """What the aggregate step made: the report, and the attempts it compared (the run's,
    and its previous run's when it has one), which the pages written after it reuse."""

    report: Report
    attempts: RunAttempts
    previous: RunAttempts | None


def aggregate(
    archive: RunArchive, scoring: Path | Scoring, progress: Progress | None = None
) -> Report:
    """The aggregate step: the report of a scoring, with the comparison to the previous run,
    written beside its verdicts. The returned report holds the dev cases too.

    A `Scoring` graded in this command gives its folded report and ledger, when it has
    them, so that its verdicts and evidence are not read back; the report is the same.

    Raises:
        ProjectError: the scoring is missing or its verdicts do not read.
        RunLockedError: another command works on the run.
    """
    return aggregate_run(archive, scoring, progress).report


def aggregate_run(
    archive: RunArchive, scoring: Path | Scoring, progress: Progress | None = None
) -> Aggregated:
    """`aggregate`, with the attempts it compared."""
    folded = scoring if isinstance(scoring, Scoring) else None
    path = scoring.path if isinstance(scoring, Scoring) else scoring
    with archive.locked("rescore"):
        (progress or Progress()).started("aggregate")
        manifest = archive.manifest()
        summary = GradingSummary.model_validate_json((path / SCORING).read_bytes())
        ahead = folded.previous if folded is not None else None
        previous = previous_attempts(archive.runs_dir, manifest, ahead)
        ledger = folded.ledger if folded is not None else None
        if ledger is None:
            ledger = read_ledger(archive, manifest)
        fold = folded.fold if folded is not None else None
        if fold is None:
            fold = ReportFold()
            for attempt in iter_graded(path):
                fold.add(attempt)
        report, attempts = fold.build(manifest, scoring=summary, previous=previous, ledger=ledger)
        write_report(path, report)
        archive.commit(path, (REPORT,))  # the last of the scoring: it is complete
    return Aggregated(report, attempts, previous)


def latest_scoring(archive: RunArchive) -> Path:
    """The run's latest scoring folder (graded, maybe not yet aggregated).

    Raises:
        ProjectError: the run has no scoring.
    """
    scorings = [path for path in archive.scorings() if (path / SCORING).exists()]
    if not scorings:
        raise ProjectError(f"{archive.location}: run {archive.run_id!r} has no scoring")
    return scorings[-1]


async def publish(bindings: RuntimeBindings, archive: RunArchive, report: Report) -> None:
    """Give the public report of a new run to the runtime's tracker, when it has one."""
    if bindings.tracker is None:
        return
    manifest = archive.manifest().model_dump(mode="json")
    public = {key: value for key, value in manifest.items() if key != "cases"}
    public_report = report.model_dump(mode="json")
    await bindings.tracker.publish(manifest=public, report=public_report)
