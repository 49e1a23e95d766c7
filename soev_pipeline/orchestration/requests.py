"""Starting a new evaluation from the UI or the schedule, without typing a partition key.

Dagster's launchpad only offers run partitions that exist. So a new evaluation is asked
for with the unpartitioned job `new_evaluation`: its one op checks the selection, makes
the run id (a sortable UTC timestamp unless given) and adds it as a `runs` partition; when
it succeeds, the sensor `start_requested_evaluations` launches `evaluate` on that partition
with the same selection. The nightly schedule asks for its run the same way, so that
previewing a tick in the UI changes nothing.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
from pydantic import Field

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.archive import check_run_id, new_run_id
from soev_pipeline.run.service import RunSelection

from .config import SplitChoice
from .resources import ProjectResource

NEW_EVALUATION = "new_evaluation"
REQUEST_OP = "request_evaluation"
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


@dg.op(name=REQUEST_OP, description="Check the selection and add the new run's partition.")
def request_evaluation(
    context: dg.OpExecutionContext, config: NewEvaluationConfig, project: ProjectResource
) -> None:
    """Check the selection, make the run id and add it as a run partition; the run's tag
    `soev/requested_run` names it for the sensor that starts `evaluate`."""
    run_id = check_run_id(config.run_id or new_run_id())
    RunSelection(tuple(config.suites), config.split.split, config.k).check(project.loaded)
    runs = project.paths.runs
    if (runs / run_id / "manifest.json").exists():
        raise ProjectError(f"{runs}: run {run_id!r} already exists")
    project.asset_keys.add_run(context.instance, run_id)
    context.instance.add_run_tags(context.run_id, {REQUESTED_RUN: run_id})
    context.log.info(f"requested evaluation run {run_id}")


@dg.job(
    name=NEW_EVALUATION,
    description="Start a new evaluation run: pick the suites, split and k, and launch. "
    "The run partition is made for you, and `evaluate` starts on it.",
    executor_def=dg.in_process_executor,
)
def new_evaluation() -> None:
    request_evaluation()


def evaluate_run_config(request: dg.DagsterRun) -> dict[str, Any]:
    """The run config of `evaluate` for a `new_evaluation` run's selection."""
    config: dict[str, Any] = dict(request.run_config or {})
    ops = config.get("ops", {})
    asked = ops.get(REQUEST_OP, {}).get("config", {})
    runtime = asked.get("runtime")
    attempt = {
        "suites": list(asked.get("suites", [])),
        "split": asked.get("split", SplitChoice.both.value),
        "k": asked.get("k", 1),
        "runtime": runtime,
        "resume": None,
    }
    return {
        "ops": {
            "attempt": {"config": attempt},
            "grade": {"config": {"offline": False, "runtime": runtime}},
            "aggregate": {"config": {"runtime": runtime}},
        }
    }


def build_request_sensor(
    new_evaluation: dg.JobDefinition,
    evaluate: "dg.UnresolvedAssetJobDefinition",
) -> dg.RunStatusSensorDefinition:
    """Launch `evaluate` on the partition that each successful `new_evaluation` added."""

    @dg.run_status_sensor(
        name="start_requested_evaluations",
        run_status=dg.DagsterRunStatus.SUCCESS,
        monitored_jobs=[new_evaluation],
        request_job=evaluate,
        minimum_interval_seconds=1,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Starts `evaluate` on the run partition a `new_evaluation` run added.",
    )
    def start_requested_evaluations(context: dg.RunStatusSensorContext) -> Iterator[dg.RunRequest]:
        request = context.dagster_run
        run_id = request.tags.get(REQUESTED_RUN)
        if run_id is None:
            return
        yield dg.RunRequest(
            run_key=run_id,
            partition_key=run_id,
            run_config=evaluate_run_config(request),
            tags={"soev/launched_by": request.tags.get("dagster/schedule_name", "ui")},
        )

    return start_requested_evaluations
