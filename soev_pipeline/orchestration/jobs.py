"""Jobs and the nightly schedule."""

import os
from datetime import UTC, datetime

import dagster as dg

from .checks import CHECK_PROMPTS_JOB
from .keys import ProjectKeys
from .requests import EVALUATE_OP

EVALUATE = "evaluate"
RESCORE = "rescore"
LOAD_SUITES = "load_suites"
NIGHTLY_CRON = "0 2 * * *"

SYSTEM_TAG = "soev/system"
"""The host and port of the system under test: a run queue limit on this tag keeps projects
that share one assistant from overloading it (see docs/deploy.md)."""


def build_jobs(keys: ProjectKeys, *, system: str = "") -> list["dg.UnresolvedAssetJobDefinition"]:
    """`evaluate` runs a new run end to end; `rescore` grades a run's archived evidence again;
    `load_suites` records a suite; `check_prompts` records the prompts and runs the check,
    and records the labels and calibrates the judge on them.

    `evaluate` runs carry the tag `soev/system` with the system's `host:port`. Neither
    `evaluate` nor `rescore` materializes `judge_prompts`: it is recorded when the prompts
    change (`check_prompts`, which the prompts watch starts, or the CLI), so a new
    materialization of it means new prompts, and the runs graded before it show as stale.
    """
    prompts, evidence = keys.asset("judge_prompts"), keys.asset("evidence")
    verdicts, report = keys.asset("verdicts"), keys.asset("report")
    return [
        dg.define_asset_job(
            EVALUATE,
            selection=dg.AssetSelection.assets(evidence, verdicts, report),
            executor_def=dg.in_process_executor,
            tags={SYSTEM_TAG: system} if system else None,
            description="Attempt every selected case k times, grade the evidence, and report.",
        ),
        dg.define_asset_job(
            RESCORE,
            selection=dg.AssetSelection.assets(verdicts, report),
            executor_def=dg.in_process_executor,
            description="Grade a run's archived evidence with the current criteria and prompts.",
        ),
        dg.define_asset_job(
            LOAD_SUITES,
            selection=dg.AssetSelection.assets(keys.asset("suites")),
            executor_def=dg.in_process_executor,
            description="Validate a suite and record the digests of its cases.",
        ),
        dg.define_asset_job(
            CHECK_PROMPTS_JOB,
            selection=dg.AssetSelection.assets(
                prompts, keys.asset("labels"), keys.asset("judge_calibration")
            )
            | dg.AssetSelection.checks_for_assets(verdicts),
            executor_def=dg.in_process_executor,
            description="Record the judge prompts and rubrics, check which runs were graded "
            "with other ones, and calibrate the judge on the human labels.",
        ),
    ]


def nightly_run_id(scheduled: datetime | None) -> str:
    """The run id of a scheduled run: `nightly-` and the scheduled UTC time."""
    moment = scheduled or datetime.now(UTC)
    return "nightly-" + moment.astimezone(UTC).strftime("%Y%m%dt%H%M%Sz")


def build_nightly_schedule(
    new_evaluation: dg.JobDefinition, cron: str | None = None
) -> dg.ScheduleDefinition:
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
        job=new_evaluation,
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
