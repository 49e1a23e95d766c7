"""The Python entry points: `evaluate()` and `rescore()`, the one path of a run.

A run is attempted, graded and aggregated here, in that order, by the step functions of
`soev_pipeline.run.service`, each of which takes the run's lock itself; the CLI calls these
functions, and the Dagster assets call the same steps one at a time. The runtime provider
is opened once around the whole run, so its clients stay open across the steps.

    from soev_pipeline import evaluate

    report = evaluate("examples/demo/project.yaml", k=3, suites=["kern"])
    print(report.overall.pass_rate, report.overall.ci95)

Nothing here records the run in Dagster: the CLI does that afterwards (a run started with
`soev-evals run` shows in the UI); a notebook gets the report and the archive.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from soev_pipeline.core.models import Split
from soev_pipeline.project import LoadedProject, ProjectPaths, load
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.heap import frozen_heap
from soev_pipeline.run.pool import workers_setting
from soev_pipeline.run.progress import Progress
from soev_pipeline.run.results import Report
from soev_pipeline.run.service import (
    AttemptedRun,
    RunSelection,
    Scoring,
    aggregate,
    attempt,
    grade,
    publish,
)
from soev_pipeline.runtime import RuntimeBindings, open_runtime

__all__ = [
    "Evaluation",
    "evaluate",
    "evaluate_run",
    "open_project",
    "rescore",
    "rescore_run",
    "run_sync",
]

T = TypeVar("T")
ProjectLike = str | os.PathLike[str] | LoadedProject


@dataclass(frozen=True)
class Evaluation:
    """A finished run or rescore: its project, its archive and what each step gave.

    Attributes:
        loaded: the project as it was loaded for the run.
        paths: where the project keeps its runs and state.
        archive: the run's folder.
        attempted: the attempt step's result; None for a rescore.
        scoring: the scoring the grade step wrote.
        report: the report of that scoring, dev cases included.
    """

    loaded: LoadedProject
    paths: ProjectPaths
    archive: RunArchive
    attempted: AttemptedRun | None
    scoring: Scoring
    report: Report

    def __repr__(self) -> str:
        # the fields hold the whole project and report: hundreds of megabytes as text
        return f"Evaluation(run={self.archive.run_id!r}, scoring={self.scoring.path.name!r})"


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
) -> Evaluation:
    """Run a new evaluation (or resume one) and return every step's result.

    Args:
        project: the path of project.yaml, or a `LoadedProject`.
        k: attempts per case.
        suites: the suites to run, by name; None or empty for every suite.
        split: "dev" or "test"; None for both.
        run_id: the new run's id (`[a-z0-9][a-z0-9._-]*`); None for a UTC timestamp. With
            `resume`, the run to resume.
        resume: run only the missing attempts of the archived run `run_id`; its selection
            and k are the manifest's.
        runtime: a runtime provider's entry point name; None for the project's `runtime`,
            else the built-in one.
        runs_dir: where runs are archived; None for `runs/` beside project.yaml.
        progress: where the steps report progress.

    Raises:
        ProjectError: a selection, a run id or the run archive is wrong; the message names
            the file and the field.
        ArmError, JudgeError: the runtime could not open (the system is unreachable, say).
        RunLockedError: another command works on the run.
        asyncio.CancelledError: the evaluation was interrupted; every finished attempt is
            archived, and `resume=True` goes on with the rest.
    """
    loaded, paths = open_project(project, runs_dir)
    workers_setting()  # a bad SOEV_GRADE_WORKERS is refused before anything is archived
    progress = progress or Progress()
    selection = RunSelection(tuple(suites or ()), split, k)
    if not resume:
        selection.check(loaded)
    if resume and run_id is None:
        raise ValueError("resume needs the run_id of the run to resume")
    run_id = check_run_id(run_id or new_run_id())
    name = runtime or loaded.project.runtime
    with frozen_heap():
        async with open_runtime(loaded, name, "run", paths.state) as bindings:
            attempted = await attempt(
                loaded,
                paths.runs,
                run_id,
                selection,
                bindings,
                resume=resume,
                runtime=name,
                progress=progress,
            )
            archive = attempted.prepared.archive
            scoring, report = await _grade_and_aggregate(
                loaded, archive, bindings, offline=False, progress=progress
            )
            await publish(bindings, archive, report)
    return Evaluation(loaded, paths, archive, attempted, scoring, report)


async def rescore_run(
    project: ProjectLike,
    run_id: str,
    *,
    offline: bool = False,
    runtime: str | None = None,
    runs_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> Evaluation:
    """Grade a run's archived evidence again with the current criteria and prompts.

    The system under test is not asked anything. `offline` opens no runtime provider: the
    judge answers from the judge cache alone, and a question it was never asked gets an
    error verdict. The new scoring is added; the earlier ones stay.

    Raises:
        ProjectError: the run does not exist or belongs to another project.
        JudgeError: the runtime's judge could not open.
        RunLockedError: another command works on the run.
    """
    loaded, paths = open_project(project, runs_dir)
    workers_setting()
    archive = RunArchive(paths.runs, check_run_id(run_id))
    archive.manifest()  # a clear error when there is no such run
    name = runtime or loaded.project.runtime
    with frozen_heap():
        async with open_runtime(loaded, name, "rescore", paths.state, offline=offline) as bindings:
            scoring, report = await _grade_and_aggregate(
                loaded, archive, bindings, offline=offline, progress=progress
            )
    return Evaluation(loaded, paths, archive, None, scoring, report)


async def _grade_and_aggregate(
    loaded: LoadedProject,
    archive: RunArchive,
    bindings: RuntimeBindings,
    *,
    offline: bool,
    progress: Progress | None,
) -> tuple[Scoring, Report]:
    """The grade and aggregate steps of a run and of a rescore."""
    scoring = await grade(
        loaded,
        archive,
        judge=bindings.judge,
        language_detector=bindings.language_detector,
        offline=offline,
        progress=progress,
    )
    return scoring, aggregate(archive, scoring.path, progress)


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
) -> Report:
    """Run a new evaluation of `project` and return its report (see `evaluate_run`).

    Works in a notebook too: where an event loop runs already, the evaluation runs on a
    loop of its own in another thread.
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
        )
    )
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
    return evaluation.report


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to its end: with `asyncio.run`, or on a thread of its own when this
    thread runs an event loop already (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_boxed(work)).value
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(_boxed(work)).value)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target, name="soev-evaluate")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


class _Box(Generic[T]):
    """The result of `asyncio.run`'s task, with a repr that does not show it.

    On its way out, `asyncio.run` asks `signal.getsignal`, which formats its own SIGINT
    handler, a partial holding the task, whose repr shows the task's result: for a result
    that holds a loaded project, hundreds of megabytes of text, made and dropped twice.
    """

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(work: Coroutine[Any, Any, T]) -> _Box[T]:
    return _Box(await work)
