"""A new run's attempt and grade steps at once: each attempt is graded as it is archived.

`service.attempt` and `service.grade` are the steps; this module runs them overlapped
for `soev_pipeline.api` (docs/runs.md#grading-while-the-attempts-run). Nothing here
imports dagster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.runtime import RuntimeBindings

from .archive import RunArchive
from .progress import Progress
from .run_attempts import PreviousAhead, read_previous_ahead
from .service import AttemptedRun, NotTheArchive, RunSelection, Scoring, attempt, grade
from .stream import ArchivedStream

T = TypeVar("T")


async def attempt_and_grade(
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
    offline: bool = False,
) -> tuple[AttemptedRun, Scoring]:
    """The attempt and grade steps of a new run, overlapped: each attempt is graded as it is
    archived (docs/runs.md#grading-while-the-attempts-run).

    The grading starts once the run is created and reads the attempts in the order they
    are archived, which is the order of the archive: its verdicts are those that `grade`
    would write after the run, byte for byte. It is kept only when the archive's attempts,
    read when the attempt step is over, are the stream's, in its order; otherwise (a
    resumed run, attempts run once more) the run is graded after its attempts, as `grade`
    does. A failure or an interruption of the attempts discards the streamed scoring.
    Meanwhile a thread reads the previous run's attempts for the report (the scoring's
    `previous`), which the aggregate step takes when no other run changed since.

    Raises:
        The errors of `attempt` and of `grade`.
    """
    progress = progress or Progress()
    stream = ArchivedStream()
    archive = RunArchive(runs_dir, run_id)

    def grading_of(arriving: ArchivedStream | None) -> Coroutine[Any, Any, Scoring]:
        """The grade step of the run: of `arriving` as it is archived, or (None) after."""
        return grade(
            loaded,
            archive,
            judge=bindings.judge,
            language_detector=bindings.language_detector,
            offline=offline,
            progress=progress,
            arriving=arriving,
        )

    attempting = asyncio.ensure_future(
        attempt(
            loaded,
            runs_dir,
            run_id,
            selection,
            bindings,
            resume=resume,
            runtime=runtime,
            progress=progress,
            retry_unrun=retry_unrun,
            stream=stream,
        )
    )
    grading: asyncio.Future[Scoring] | None = None
    ahead: asyncio.Future[PreviousAhead | None] | None = None
    try:
        opened = asyncio.ensure_future(stream.opened.wait())
        try:
            await asyncio.wait((attempting, opened), return_when=asyncio.FIRST_COMPLETED)
        finally:
            opened.cancel()
        if stream.opened.is_set() and not stream.closed:
            ahead = asyncio.ensure_future(
                _once_archived(stream, lambda: asyncio.to_thread(_read_ahead, archive))
            )
            grading = asyncio.ensure_future(_once_archived(stream, lambda: grading_of(stream)))
            # a grading that failed takes no more lines: its error is raised after the run
            grading.add_done_callback(lambda _: stream.close())
        attempted = await attempting
    except BaseException:
        stream.close()
        tasks = [task for task in (attempting, grading, ahead) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    stream.close()
    scoring: Scoring | None = None
    if grading is not None:
        try:
            scoring = replace(await grading, ledger=stream.ledger())
        except NotTheArchive:
            scoring = None
        if scoring is not None and ahead is not None:
            scoring = replace(scoring, previous=await ahead)
    if scoring is None:
        scoring = await grading_of(None)
    return attempted, scoring


async def _once_archived(stream: ArchivedStream, work: Callable[[], Awaitable[T]]) -> T:
    """`work`, begun once the first attempt is archived (or the stream is closed).

    The grading and the read-ahead of the previous run are not needed for the first
    requests; begun with them, their threads and start-up work (the start-up thread's
    imports that grading waits for: `Progress.started`) take the interpreter's lock from
    the event loop that sends those requests and opens their connections
    (`bench/throughput.py`'s 50 ms run: its first attempts took 150 ms instead of 60).
    """
    await stream.first.wait()
    return await work()


def _read_ahead(archive: RunArchive) -> PreviousAhead | None:
    """The previous run's attempts for the report, read on a thread while the attempts
    run (`read_previous_ahead`); None when they do not read: the aggregate step then reads
    them itself, and says what is wrong. In an object store it reads nothing: the runs
    there have no state to check cheaply (`read_previous_ahead`)."""
    if not isinstance(archive.runs_dir, Path):
        return None
    try:
        return read_previous_ahead(archive.runs_dir, archive.manifest())
    except (ProjectError, OSError):
        return None
