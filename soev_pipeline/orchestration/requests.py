"""Starting a new evaluation from the UI or the schedule, without typing a partition key.

Dagster's launchpad only offers run partitions that exist, so a new evaluation is the
unpartitioned job `new_evaluation`. Its one op makes the run id (a sortable UTC timestamp
unless given), adds it as a run partition and runs the evaluation itself, with the steps
that `soev-evals run` runs (`soev_pipeline.api`), in the same process and at once; it then
logs the materializations of `evidence`, `verdicts` and `report` of that partition, and
the checks, in its own run (`record.evaluation_events`). The nightly schedule launches the
same job. `evaluate` on an existing partition (to resume it, re-execute it, or backfill)
stays the asset job.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg
from pydantic import Field

from soev_pipeline.api import evaluate_run
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.archive import check_run_id, new_run_id
from soev_pipeline.run.progress import Progress
from soev_pipeline.run.service import RunSelection

from .config import SplitChoice
from .record import evaluation_events
from .resources import ProjectResource, RuntimeResource
from .steps import one_line_errors

NEW_EVALUATION = "new_evaluation"
EVALUATE_OP = "evaluate_new_run"
REQUESTED_RUN = "soev/requested_run"


class NewEvaluationConfig(dg.Config):
    """A new evaluation: what it runs, and optionally its run id."""

    run_id: str = Field(
        default="",
        description="The id of the new run ([a-z0-9][a-z0-9._-]*); empty for a UTC timestamp.",
    )
    suites: list[str] = Field(
        default=[], description="The suites to run, by name; empty runs every suite."
    )
    split: SplitChoice = Field(
        default=SplitChoice.both, description="The split to run: dev, test, or both."
    )
    k: int = Field(default=1, ge=1, description="How many times each case is attempted.")
    runtime: str | None = Field(
        default=None, description="A runtime provider; empty for the project's, else built-in."
    )


class _LogProgress(Progress):
    def __init__(self, context: dg.OpExecutionContext) -> None:
        self._log = context.log

    def phase(self, text: str) -> None:
        self._log.info(text)


@dg.op(
    name=EVALUATE_OP,
    description="Make the run's id and partition, attempt, grade and aggregate it, and record "
    "its assets.",
)
def evaluate_new_run(
    context: dg.OpExecutionContext,
    config: NewEvaluationConfig,
    project: ProjectResource,
    runtime: RuntimeResource,
) -> None:
    """Check the selection, add the run partition (named in the tag `soev/requested_run`),
    run the evaluation and log what it made. A re-execution of a `new_evaluation` run (from
    the UI, after it was terminated, say) resumes the evaluation that run started."""
    with one_line_errors(project.project_file):
        loaded, paths, keys = project.loaded, project.paths, project.asset_keys
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
        archived = (paths.runs / run_id / "manifest.json").exists()
        if archived and resumed is None:
            raise ProjectError(f"{paths.runs}: run {run_id!r} already exists")
        keys.add_run(context.instance, run_id)
        context.instance.add_run_tags(context.run_id, {REQUESTED_RUN: run_id})
        context.log.info(f"evaluation run {run_id}")
        evaluation = runtime.session.run(
            evaluate_run(
                loaded,
                k=config.k,
                suites=config.suites,
                split=config.split.split,
                run_id=run_id,
                resume=archived,
                runtime=config.runtime,
                runs_dir=paths.runs,
                progress=_LogProgress(context),
            )
        )
        for event in evaluation_events(
            evaluation, context.instance, keys, launched_by=_launched_by(context), in_run=True
        ):
            context.log_event(event)  # type: ignore[arg-type]  # checks too, since 1.7


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


def _launched_by(context: dg.OpExecutionContext) -> str:
    return context.run.tags.get("dagster/schedule_name", "ui")


def build_new_evaluation_job(tags: dict[str, Any] | None = None) -> dg.JobDefinition:
    """The job that starts a new evaluation run (see the module's docstring); `tags` go on
    every run of it (the system's `soev/system`, for the queue's limit per assistant)."""

    @dg.job(
        name=NEW_EVALUATION,
        description="Start a new evaluation run: pick the suites, split and k, and launch. "
        "The run partition is made for you, and the run's assets are recorded.",
        executor_def=dg.in_process_executor,
        tags=tags,
    )
    def new_evaluation() -> None:
        evaluate_new_run()

    return new_evaluation
