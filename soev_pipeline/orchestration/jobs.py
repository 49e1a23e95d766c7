"""The jobs and the nightly schedule.

The asset jobs select their assets by the tag `soev/asset`, which every asset carries with
its plain name, so they are written once for every project, whatever its key prefix.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from functools import reduce

import dagster as dg

from .keys import ASSET_TAG
from .new_evaluation import EVALUATE_OP, evaluate_new_run

EVALUATE = "evaluate"
RESCORE = "rescore"
LOAD_SUITES = "load_suites"
CHECK_PROMPTS = "check_prompts"
NEW_EVALUATION = "new_evaluation"
NIGHTLY_CRON = "0 2 * * *"

SYSTEM_TAG = "soev/system"
"""The host and port of the system under test: a run queue limit on this tag keeps projects
that share one assistant from overloading it (see docs/deploy.md). `definitions` puts it on
the jobs that talk to the system."""


def assets(*names: str) -> dg.AssetSelection:
    """The assets called `names` (by their plain names), with their checks."""
    return reduce(
        lambda left, right: left | right,
        [dg.AssetSelection.tag(ASSET_TAG, name) for name in names],
    )


def checks_of(name: str) -> dg.AssetSelection:
    """The checks of the asset called `name`, without the asset."""
    return assets(name) - assets(name).without_checks()


evaluate = dg.define_asset_job(
    EVALUATE,
    selection=assets("judge_prompts", "evidence", "verdicts", "report"),
    executor_def=dg.in_process_executor,
    description="Attempt every selected case k times, grade the evidence, and report (a new "
    "run on a run partition, or the rest of an interrupted one). Records the judge prompts "
    "first, so the run's lineage names the ones it was graded with.",
)
rescore = dg.define_asset_job(
    RESCORE,
    selection=assets("judge_prompts", "verdicts", "report"),
    executor_def=dg.in_process_executor,
    description="Grade a run's archived evidence with the current criteria and prompts, and "
    "report it; the system under test is not asked anything.",
)
load_suites = dg.define_asset_job(
    LOAD_SUITES,
    selection=assets("suites"),
    executor_def=dg.in_process_executor,
    description="Validate a suite and record the digests of its cases.",
)
check_prompts = dg.define_asset_job(
    CHECK_PROMPTS,
    selection=assets("judge_prompts", "labels", "judge_calibration", "judge_probes")
    | checks_of("verdicts"),
    executor_def=dg.in_process_executor,
    description="Record the judge prompts, rubrics and labels, check which runs were graded "
    "with other prompts, calibrate the judge on the human labels, and probe it for biases.",
)


@dg.job(
    name=NEW_EVALUATION,
    description="Start a new evaluation run: pick the suites, split and k, and launch. The "
    "run partition is made for you once the run is archived, and the run's assets are "
    "recorded.",
    executor_def=dg.in_process_executor,
)
def new_evaluation() -> None:
    evaluate_new_run()


def nightly_run_id(scheduled: datetime | None) -> str:
    """The run id of a scheduled run: `nightly-` and the scheduled UTC time."""
    moment = scheduled or datetime.now(UTC)
    return "nightly-" + moment.astimezone(UTC).strftime("%Y%m%dt%H%M%Sz")


def nightly_schedule(cron: str | None = None) -> dg.ScheduleDefinition:
    """A schedule that asks for a new evaluation run every night (`new_evaluation`).

    Its run id is `nightly-` and the scheduled UTC time. The tick only asks: the partition
    is added by the `new_evaluation` run it launches, so previewing a tick in the UI
    changes nothing. The cron comes from `cron`, else `$SOEV_NIGHTLY_CRON`, else 02:00 UTC
    every day. The schedule starts stopped unless `$SOEV_NIGHTLY` is `on`; once it is
    turned on or off in the UI, the UI's choice is kept by Dagster and wins.
    """
    cron = cron or os.environ.get("SOEV_NIGHTLY_CRON") or NIGHTLY_CRON
    status = (
        dg.DefaultScheduleStatus.RUNNING
        if os.environ.get("SOEV_NIGHTLY", "").lower() == "on"
        else dg.DefaultScheduleStatus.STOPPED
    )

    @dg.schedule(
        name="nightly",
        cron_schedule=cron,
        execution_timezone="UTC",
        job_name=NEW_EVALUATION,
        default_status=status,
        description=f"A new evaluation run on every suite and both splits, at cron {cron!r} (UTC).",
    )
    def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        run_id = nightly_run_id(context.scheduled_execution_time)
        return dg.RunRequest(
            run_key=run_id,
            run_config={"ops": {EVALUATE_OP: {"config": {"run_id": run_id}}}},
        )

    return nightly
