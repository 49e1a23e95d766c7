"""Starting a new evaluation from the UI or the schedule, without typing a partition key.

Dagster's launchpad only offers run partitions that exist, so a new evaluation is the
unpartitioned job `new_evaluation`. Its one op makes the run id (a sortable UTC timestamp
unless given) and runs the evaluation at once, in the same process, through
`soev_pipeline.api.execute` (the function the CLI and the asset jobs run); it then logs
what the run made in its own run (`record.record_evaluation`). The run partition is added
only once the run is archived, so an evaluation that fails before (the assistant is down)
leaves no empty partition behind. `evaluate` on an existing partition (to resume it,
re-execute it, or backfill) stays the asset job.
"""

from collections.abc import Callable

import dagster as dg

from soev_pipeline.api import execute, run_sync
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.service import RunSelection

from .config import NewEvaluationConfig
from .failures import one_line_errors
from .keys import add_run
from .progress import LogProgress
from .record import record_evaluation
from .resources import SoevProject

EVALUATE_OP = "evaluate_new_run"
REQUESTED_RUN = "soev/requested_run"


@dg.op(
    name=EVALUATE_OP,
    description="Make the run's id, attempt, grade and aggregate it, and record its assets.",
)
def evaluate_new_run(
    context: dg.OpExecutionContext, config: NewEvaluationConfig, project: SoevProject
) -> None:
    """Check the request, run the evaluation and log what it made. A re-execution of a
    `new_evaluation` run (from the UI, after it was terminated, say) resumes the evaluation
    that run started."""
    with one_line_errors(project.project_file):
        loaded, paths = project.loaded, project.paths
        resumed = _resumed_run(context)
        run_id = resumed or config.run_id or new_run_id()
        selection = RunSelection(tuple(config.suites), config.split.split, config.k)
        problems = [
            str(exc)
            for check in (lambda: check_run_id(run_id), lambda: selection.check(loaded))
            if (exc := _refusal(check)) is not None
        ]
        if problems:  # every problem of the request at once, not the first alone
            raise ProjectError("; ".join(problems))
        archive = RunArchive(paths.runs, run_id)
        if archive.exists() and resumed is None:
            raise ProjectError(f"{paths.runs}: run {run_id!r} already exists")
        context.instance.add_run_tags(context.run_id, {REQUESTED_RUN: run_id})
        context.log.info(f"evaluation run {run_id}")
        try:
            evaluation = run_sync(
                execute(
                    loaded,
                    run_id,
                    selection=selection,
                    resume=archive.exists(),
                    runtime=config.runtime,
                    runs_dir=paths.runs,
                    progress=LogProgress(context.log),
                )
            )
        except BaseException:
            if archive.exists():  # an interrupted run: its partition, to re-execute it
                add_run(context.instance, run_id, project.name)
            raise
        record_evaluation(
            evaluation,
            context.instance,
            context.log_event,  # type: ignore[arg-type]  # checks too, since 1.7
            prefix=project.name,
            launched_by=context.run.tags.get("dagster/schedule_name", "ui"),
            in_run=True,
        )


def _refusal(check: Callable[[], object]) -> ProjectError | None:
    try:
        check()
    except ProjectError as exc:
        return exc
    return None


def _resumed_run(context: dg.OpExecutionContext) -> str | None:
    """The run id of the evaluation that this Dagster run re-executes, if it is one: a
    re-execution goes on with that evaluation rather than starting another."""
    parent_id = context.run.parent_run_id
    parent = context.instance.get_run_by_id(parent_id) if parent_id else None
    return parent.tags.get(REQUESTED_RUN) if parent is not None else None
