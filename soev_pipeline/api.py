"""The Python entry points and the one composition of a run: `execute()`.

Every front end runs a run through `execute`: `soev-evals run` and `rescore`, the Python
API below (`evaluate`, `rescore`), and every Dagster job, backfill and schedule (their
assets call it with the steps their selection names). So every front end takes the same
steps in the same order, writes the same artifacts (the scoring's report.json and
report.html), publishes a new run's report by the same rule, and runs its event loop the
same way (`run_sync`).

    from soev_pipeline import evaluate

    report = evaluate("examples/demo/project.yaml", k=3, suites=["kern"])
    print(report.overall.pass_rate, report.overall.ci95)

Nothing here records the run in Dagster: the CLI and the Dagster layer do that with what
`execute` returns (a run started with `soev-evals run` shows in the UI); a notebook gets
the report and the archive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from soev_pipeline.core import generators
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Split
from soev_pipeline.project import LoadedProject, ProjectPaths, load
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.heap import collector_paused, frozen_heap
from soev_pipeline.run.overlap import attempt_and_grade
from soev_pipeline.run.pool import workers_setting
from soev_pipeline.run.progress import Progress, Step
from soev_pipeline.run.results import Report
from soev_pipeline.run.service import (
    AttemptedRun,
    RunSelection,
    Scoring,
    aggregate_run,
    attempt,
    grade,
    latest_scoring,
    publish,
)
from soev_pipeline.runtime import Operation, RuntimeBindings, open_runtime

__all__ = [
    "STEPS",
    "Evaluation",
    "evaluate",
    "evaluate_run",
    "execute",
    "open_project",
    "rescore",
    "rescore_run",
    "run_sync",
]

T = TypeVar("T")
ProjectLike = str | os.PathLike[str] | LoadedProject

STEPS: tuple[Step, ...] = ("attempt", "grade", "aggregate")
"""The steps of a run, in their order. A run executes a contiguous part of them."""

CANCEL_GRACE_S = 30.0
"""How long an interrupted `run_sync` waits for its work to finish cancelling."""


@dataclass(frozen=True)
class Evaluation:
    """What `execute` did: the project, the archive and what each step it ran gave.

    Attributes:
        loaded: the project as it was loaded for the run.
        paths: where the project keeps its runs and state.
        archive: the run's folder.
        steps: the steps that ran, in order.
        attempted: the attempt step's result; None when it did not run.
        scoring: the scoring the grade step wrote, or that the aggregate step reported.
        report: the report of that scoring, dev cases included; None without aggregate.
    """

    loaded: LoadedProject
    paths: ProjectPaths
    archive: RunArchive
    steps: tuple[Step, ...]
    attempted: AttemptedRun | None
    scoring: Scoring | None
    report: Report | None

    @property
    def html_report(self) -> Path | None:
        """The self-contained HTML report the aggregate step wrote beside report.json."""
        if self.scoring is None or self.report is None:
            return None
        from soev_pipeline.view.html_report import HTML_REPORT

        return self.scoring.path / HTML_REPORT

    def __repr__(self) -> str:
        # the fields hold the whole project and report: hundreds of megabytes as text
        scoring = None if self.scoring is None else self.scoring.path.name
        return f"Evaluation(run={self.archive.run_id!r}, steps={self.steps}, scoring={scoring!r})"


def open_project(
    project: ProjectLike, runs_dir: str | Path | None = None
) -> tuple[LoadedProject, ProjectPaths]:
    """Load the project at a path (or take a loaded one) and find its paths.

    Raises:
        ProjectError and the other errors of `soev_pipeline.project.load`.
    """
    if isinstance(project, LoadedProject):
        return project, ProjectPaths.of(project.path, runs_dir)
    paths = ProjectPaths.of(Path(project), runs_dir)
    return load(paths.project_file, suite_cache=paths.suite_cache), paths


def check_steps(steps: Sequence[Step]) -> tuple[Step, ...]:
    """`steps` in the order of `STEPS`, refused unless they are a contiguous part of it.

    Raises:
        ValueError: a step is unknown, or the steps skip one (attempt and aggregate
            without grade, say).
    """
    unknown = [step for step in steps if step not in STEPS]
    if unknown or not steps:
        raise ValueError(f"steps must be a contiguous part of {STEPS}, not {tuple(steps)}")
    first, last = STEPS.index(min(steps, key=STEPS.index)), STEPS.index(max(steps, key=STEPS.index))
    ordered = STEPS[first : last + 1]
    if set(ordered) != set(steps):
        raise ValueError(f"steps must be a contiguous part of {STEPS}, not {tuple(steps)}")
    return ordered


async def execute(
    project: ProjectLike,
    run_id: str | None = None,
    *,
    steps: Sequence[Step] = STEPS,
    selection: RunSelection | None = None,
    resume: bool | None = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    retry_unrun: bool | None = None,
    graded: Callable[[Evaluation], object] | None = None,
) -> Evaluation:
    """Run `steps` of run `run_id`: the one composition of every front end.

    - `attempt` creates the run (or reopens it to resume) and archives every attempt;
    - `grade` grades the archived evidence with the current criteria and prompts into a
      new scoring;
    - `aggregate` reports a scoring (the new one, else the run's latest): report.json and
      the self-contained report.html beside it; when `attempt` ran too, the report then
      goes to the runtime's tracker (a new run is published, a rescore is not).

    The runtime provider is opened once around the steps that need it (`attempt` its arm,
    `grade` its judge, a publishing `aggregate` its tracker), so its clients stay open
    across them; `offline` opens none, and the judge answers from the judge cache alone.

    Args:
        project: the path of project.yaml, or a `LoadedProject`.
        run_id: the run (`[a-z0-9][a-z0-9._-]*`); None makes a new UTC timestamp id, which
            only `attempt` may do.
        steps: a contiguous part of `STEPS`.
        selection: suites, split and k of a new run (ignored when it resumes).
        resume: for `attempt`: True runs only the missing attempts of the archived run,
            False refuses an archived run, None resumes when the run is archived.
        runtime: a runtime provider's entry point name; None for the project's `runtime`,
            else the built-in one.
        runs_dir: where runs are archived; None for `runs/` beside project.yaml.
        offline: answer judge criteria from the judge cache only; opens no provider.
        progress: where the steps report progress.
        retry_unrun: for `attempt`: run the attempts that did not run once more, after the
            others; None for the project's `system.retry_unrun` (true by default).
        graded: called once the grade step is done and before the aggregate step, with
            what the steps made so far (no report yet), on the event loop's thread: it must
            not block. `soev-evals run` starts recording the run in Dagster there.

    Raises:
        ProjectError: a selection, a run id or the run archive is wrong; the message names
            the file and the field.
        ArmError, JudgeError: the runtime could not open (the system is unreachable, say).
        UnreachableSystemError: an `ArmError`: the run's first attempts all failed the same
            way before any reply (a wrong route or key); nothing is graded, and the run
            stays resumable.
        RunLockedError: another command works on the run.
        asyncio.CancelledError: the run was interrupted; every finished attempt is
            archived, and running `attempt` again with `resume` goes on with the rest.
    """
    ordered = check_steps(steps)
    loaded, paths = open_project(project, runs_dir)
    workers_setting()  # a bad SOEV_GRADE_WORKERS is refused before anything is archived
    progress = progress or Progress()
    attempting = "attempt" in ordered
    if run_id is None and not attempting:
        raise ProjectError("a run id is needed to grade or report a run")
    selection = selection or RunSelection()
    if attempting and resume is False:
        selection.check(loaded)
    run_id = check_run_id(run_id or new_run_id())
    archive = RunArchive(paths.runs, run_id)
    if not attempting:
        archive.manifest()  # a clear error when there is no such run
    name = runtime or loaded.project.runtime
    attempted: AttemptedRun | None = None
    scoring: Scoring | None = None
    report: Report | None = None
    with frozen_heap():
        async with AsyncExitStack() as stack:
            bindings = RuntimeBindings()
            if attempting or "grade" in ordered:
                operation: Operation = "run" if attempting else "rescore"
                bindings = await stack.enter_async_context(
                    open_runtime(loaded, name, operation, paths.state, offline=offline)
                )
            if attempting and "grade" in ordered:
                attempted, scoring = await attempt_and_grade(
                    loaded,
                    paths.runs,
                    run_id,
                    selection,
                    bindings,
                    resume=resume,
                    runtime=name,
                    progress=progress,
                    retry_unrun=retry_unrun,
                    offline=offline,
                )
            elif attempting:
                attempted = await attempt(
                    loaded,
                    paths.runs,
                    run_id,
                    selection,
                    bindings,
                    resume=resume,
                    runtime=name,
                    progress=progress,
                    retry_unrun=retry_unrun,
                )
            elif "grade" in ordered:
                scoring = await grade(
                    loaded,
                    archive,
                    judge=bindings.judge,
                    language_detector=bindings.language_detector,
                    offline=offline,
                    progress=progress,
                )
            if graded is not None and scoring is not None:
                graded(Evaluation(loaded, paths, archive, ordered, attempted, scoring, None))
            if "aggregate" in ordered:
                scoring = scoring or Scoring.read(archive, latest_scoring(archive))
                with collector_paused():
                    made = aggregate_run(archive, scoring, progress)
                    report = made.report
                    known = [made.attempts]
                    if made.previous is not None:
                        known.append(made.previous)
                    # imported when needed: `soev-evals run` imports it while attempts run
                    from soev_pipeline.view.html_report import write_scoring_pages

                    pages = write_scoring_pages(
                        loaded, archive, scoring.path, known=known, comparison=report.previous
                    )
                    archive.commit(scoring.path, pages)
                if attempting:
                    await publish(bindings, archive, report)
    return Evaluation(loaded, paths, archive, ordered, attempted, scoring, report)


async def evaluate_run(
    project: ProjectLike,
    *,
    k: int = 1,
    suites: Sequence[str] | None = None,
    split: Split | None = None,
    run_id: str | None = None,
    resume: bool = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    progress: Progress | None = None,
    retry_unrun: bool | None = None,
    graded: Callable[[Evaluation], object] | None = None,
) -> Evaluation:
    """Run a new evaluation (or resume one): every step of `execute`.

    Args:
        project: the path of project.yaml, or a `LoadedProject`.
        k: attempts per case.
        suites: the suites to run, by name; None or empty for every suite.
        split: "dev" or "test"; None for both.
        run_id: the new run's id; None for a UTC timestamp. With `resume`, the run to
            resume.
        resume: run only the missing attempts of the archived run `run_id`; its selection
            and k are the manifest's.
        runtime, runs_dir, progress, retry_unrun, graded: as for `execute`.

    Raises:
        ValueError: `resume` without a `run_id`.
        The errors of `execute`.
    """
    if resume and run_id is None:
        raise ValueError("resume needs the run_id of the run to resume")
    return await execute(
        project,
        run_id,
        selection=RunSelection(tuple(suites or ()), split, k),
        resume=resume,
        runtime=runtime,
        runs_dir=runs_dir,
        progress=progress,
        retry_unrun=retry_unrun,
        graded=graded,
    )


async def rescore_run(
    project: ProjectLike,
    run_id: str,
    *,
    offline: bool = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Grade a run's archived evidence again with the current criteria and prompts, and
    report it: the steps `grade` and `aggregate` of `execute`.

    The system under test is not asked anything. `offline` opens no runtime provider: the
    judge answers from the judge cache alone, and a question it was never asked gets an
    error verdict. The new scoring is added; the earlier ones stay.

    Raises:
        ProjectError: the run does not exist or belongs to another project.
        JudgeError: the runtime's judge could not open.
        RunLockedError: another command works on the run.
    """
    return await execute(
        project,
        run_id,
        steps=("grade", "aggregate"),
        offline=offline,
        runtime=runtime,
        runs_dir=runs_dir,
        progress=progress,
    )


def evaluate(
    project: ProjectLike,
    *,
    k: int = 1,
    suites: Sequence[str] | None = None,
    split: Split | None = None,
    run_id: str | None = None,
    resume: bool = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    progress: Progress | None = None,
    retry_unrun: bool | None = None,
) -> Report:
    """Run a new evaluation of `project` and return its report (see `evaluate_run`).

    Works in a notebook too (see `run_sync`).
    """
    evaluation = run_sync(
        evaluate_run(
            project,
            k=k,
            suites=suites,
            split=split,
            run_id=run_id,
            resume=resume,
            runtime=runtime,
            runs_dir=runs_dir,
            progress=progress,
            retry_unrun=retry_unrun,
        )
    )
    assert evaluation.report is not None  # every step ran
    return evaluation.report


def rescore(
    project: ProjectLike,
    run_id: str,
    *,
    offline: bool = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> Report:
    """Grade the archived evidence of run `run_id` again and return the new report (see
    `rescore_run`)."""
    evaluation = run_sync(
        rescore_run(
            project,
            run_id,
            offline=offline,
            runtime=runtime,
            runs_dir=runs_dir,
            progress=progress,
        )
    )
    assert evaluation.report is not None  # aggregate ran
    return evaluation.report


def run_sync(work: Coroutine[Any, Any, T], *, grace: float = CANCEL_GRACE_S) -> T:
    """Run `work` to its end on an event loop of its own, in a thread of its own; the one
    way every front end runs its async work.

    The calling thread only waits, so it works the same from a script, from a notebook
    whose thread runs a loop already, and from a Dagster step. When the wait is
    interrupted (Ctrl-C, a signal the command turned into one, a terminated Dagster run),
    the work is cancelled, given `grace` seconds to finish cancelling (finished attempts
    stay archived, grading workers stop), and the interruption goes on.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(_boxed(work))
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def target() -> None:
        asyncio.set_event_loop(loop)
        try:
            box = loop.run_until_complete(task)
        except BaseException as exc:
            done.set_exception(exc)
        else:
            done.set_result(box.value)
        finally:
            try:
                _finish(loop)
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    thread = threading.Thread(target=target, name="soev-run", daemon=True)
    try:
        thread.start()  # inside: an interruption as soon as the work starts cancels it too
        return done.result()
    except BaseException:
        if thread.ident is None:  # interrupted before the thread began: the work never ran
            task.cancel()
            loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
            loop.close()
        elif not done.done():
            loop.call_soon_threadsafe(task.cancel)
            thread.join(grace)
        raise


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does on its way out: cancel what is left, close generators and
    the default executor."""
    left = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())


class _Box(Generic[T]):
    """The result of the work, with a repr that does not show it: a result that holds a
    loaded project would otherwise be formatted (hundreds of megabytes of text) wherever
    the task is shown."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(work: Coroutine[Any, Any, T]) -> _Box[T]:
    return _Box(await generators.tracked(work))
