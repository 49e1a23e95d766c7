"""A new run's attempt and grade steps at once: each attempt is graded as it is archived.

`service.attempt` and `service.grade` are the steps; this module runs them overlapped
for `soev_pipeline.api` (docs/runs.md#grading-while-the-attempts-run). Nothing here
imports dagster.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.runtime import RuntimeBindings

from .archive import RunArchive
from .progress import Progress
from .service import AttemptedRun, NotTheArchive, RunSelection, Scoring, attempt, grade
from .stream import ArchivedStream


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

    Raises:
        The errors of `attempt` and of `grade`.
    """
    progress = progress or Progress()
    stream = ArchivedStream()
    archive = RunArchive(runs_dir, run_id)
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
    try:
        opened = asyncio.ensure_future(stream.opened.wait())
        try:
            await asyncio.wait((attempting, opened), return_when=asyncio.FIRST_COMPLETED)
        finally:
            opened.cancel()
        if stream.opened.is_set() and not stream.closed:
            grading = asyncio.ensure_future(
                grade(
                    loaded,
                    archive,
                    judge=bindings.judge,
                    language_detector=bindings.language_detector,
                    offline=offline,
                    progress=progress,
                    arriving=stream,
                )
            )
            # a grading that failed takes no more lines: its error is raised after the run
            grading.add_done_callback(lambda _: stream.close())
        attempted = await attempting
    except BaseException:
        stream.close()
        for task in (attempting, grading):
            if task is not None:
                task.cancel()
        await asyncio.gather(
            *(task for task in (attempting, grading) if task is not None), return_exceptions=True
        )
        raise
    stream.close()
    scoring: Scoring | None = None
    if grading is not None:
        try:
            scoring = replace(await grading, ledger=stream.ledger())
        except NotTheArchive:
            scoring = None
    if scoring is None:
        scoring = await grade(
            loaded,
            archive,
            judge=bindings.judge,
            language_detector=bindings.language_detector,
            offline=offline,
            progress=progress,
        )
    return attempted, scoring
