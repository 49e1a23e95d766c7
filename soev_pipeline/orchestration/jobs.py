"""Jobs and the nightly schedule."""

from __future__ import annotations

import os
from datetime import UTC

import dagster as dg

from .checks import PROMPTS_CHECK_JOB
from .names import PLAIN, Names

EVALUATE = "evaluate"
RESCORE = "rescore"
LOAD_SUITES = "load_suites"
NIGHTLY_CRON = "0 2 * * *"


SYSTEM_TAG = "soev/system"
"""The host and port of the system under test: a run queue limit on this tag keeps projects
that share one assistant from overloading it (see docs/deploy.md)."""


def build_jobs(
    suites: dg.AssetsDefinition,
    judge_prompts: dg.AssetsDefinition,
    evidence: dg.AssetsDefinition,
    verdicts: dg.AssetsDefinition,
    report: dg.AssetsDefinition,
    *,
    system: str = "",
    names: Names = PLAIN,
) -> list[dg.UnresolvedAssetJobDefinition]:
    """`evaluate` runs a new run end to end; `rescore` grades a run's archived evidence again.

    `evaluate` runs carry the tag `soev/system` with the system's `host:port`.
    """
    evaluate = dg.define_asset_job(
        names(EVALUATE),
        selection=dg.AssetSelection.assets(judge_prompts, evidence, verdicts, report),
        executor_def=dg.in_process_executor,
        tags={SYSTEM_TAG: system} if system else None,
        description="Attempt every selected case k times, grade the evidence, and report.",
    )
    rescore = dg.define_asset_job(
        names(RESCORE),
        selection=dg.AssetSelection.assets(judge_prompts, verdicts, report),
        executor_def=dg.in_process_executor,
        description="Grade a run's archived evidence with the current criteria and prompts.",
    )
    load_suites = dg.define_asset_job(
        names(LOAD_SUITES),
        selection=dg.AssetSelection.assets(suites),
        executor_def=dg.in_process_executor,
        description="Validate a suite and record the digests of its cases.",
    )
    check_prompts = dg.define_asset_job(
        names(PROMPTS_CHECK_JOB),
        selection=dg.AssetSelection.assets(judge_prompts)
        | dg.AssetSelection.checks_for_assets(verdicts),
        executor_def=dg.in_process_executor,
        description="Record the judge prompts and rubrics, and check which runs were graded "
        "with other ones.",
    )
    return [evaluate, rescore, load_suites, check_prompts]


def nightly_run_id(scheduled: object) -> str:
    """The run id of a scheduled run: `nightly-` and the scheduled UTC time."""
    from datetime import datetime

    moment = scheduled if isinstance(scheduled, datetime) else datetime.now(UTC)
    return "nightly-" + moment.astimezone(UTC).strftime("%Y%m%dt%H%M%Sz")


def build_nightly_schedule(
    new_evaluation: dg.JobDefinition, cron: str | None = None, names: Names = PLAIN
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
        name=names("nightly"),
        cron_schedule=cron,
        execution_timezone="UTC",
        job=new_evaluation,
        default_status=status,
        description="A new evaluation run every night, on every suite and both splits.",
    )
    def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        run_id = nightly_run_id(context.scheduled_execution_time)
        return dg.RunRequest(
            run_key=run_id,
            run_config={"ops": {names("request_evaluation"): {"config": {"run_id": run_id}}}},
        )

    return nightly
