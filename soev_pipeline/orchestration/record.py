"""Record an evaluation that ran outside the asset jobs: `soev-evals run` and `rescore`, and
the `new_evaluation` job of the UI and the nightly schedule.

These run the steps of `soev_pipeline.api` in one go, and then record what the steps made
as materializations of the project's assets (`suites` whose digest changed, `judge_prompts`
when they changed, `evidence`, `verdicts` and `report` of the run's partition) and the
evaluations of their checks, with the same metadata as the asset jobs. The CLI reports
them to the instance (`record`); the `new_evaluation` op logs them in its own run
(`evaluation_events`), where they link to that run.

Staleness: such a materialization carries no data provenance (Dagster writes that only for
the assets a run computes), so Dagster judges it by time, which is what this project means
by stale: `verdicts` of a run are stale once `judge_prompts` was materialized after them (a
prompt or rubric changed: the prompts watch, or the next command, records that), `evidence`
once a suite it ran changed. The prompts version of the verdicts goes in the tag
`soev/prompts_version`, which `graded_with_current_prompts` reads as it reads the code
version of an asset job's verdicts.
"""

from __future__ import annotations

import dagster as dg

from soev_pipeline.api import Evaluation

from . import metadata
from .checks import latest_versions
from .instance import project_instance
from .keys import ProjectKeys, keys_of

LAUNCHED_BY = "soev/launched_by"
Event = dg.AssetMaterialization | dg.AssetCheckEvaluation


def evaluation_events(
    evaluation: Evaluation,
    instance: dg.DagsterInstance,
    keys: ProjectKeys,
    *,
    launched_by: str,
    in_run: bool,
) -> list[Event]:
    """The materializations and check evaluations that record `evaluation`.

    `in_run` says that a Dagster run logs them (the check of `report` is then the
    partition's); reported from outside a run, the check is the asset's, naming the run in
    its metadata: Dagster 1.13 stores one reported evaluation per partition, and a second
    one (after a rescore) breaks a unique key of its storage.
    """
    loaded, archive = evaluation.loaded, evaluation.archive
    run_id, version = archive.run_id, loaded.prompts_version
    tags = {LAUNCHED_BY: launched_by}
    versioned = {**tags, metadata.PROMPTS_VERSION_TAG: version}
    events: list[Event] = []
    for name in archive.manifest().suites:
        suite = loaded.suite(name)
        if metadata.recorded_suite_digest(instance, keys.asset("suites"), name) != suite.digest():
            events.append(
                dg.AssetMaterialization(
                    keys.asset("suites"),
                    partition=name,
                    metadata=metadata.suite(loaded, suite),
                    tags=tags,
                )
            )
    if metadata.recorded_prompts_version(instance, keys.asset("judge_prompts")) != version:
        events.append(
            dg.AssetMaterialization(
                keys.asset("judge_prompts"), metadata=metadata.prompts(loaded), tags=tags
            )
        )
    if evaluation.attempted is not None:
        events.append(
            dg.AssetMaterialization(
                keys.asset("evidence"),
                partition=run_id,
                metadata=metadata.evidence(evaluation.attempted),
                tags=tags,
            )
        )
    events.append(
        dg.AssetMaterialization(
            keys.asset("verdicts"),
            partition=run_id,
            metadata=metadata.verdicts(evaluation.scoring, version),
            tags=versioned,
        )
    )
    events.append(
        dg.AssetMaterialization(
            keys.asset("report"),
            partition=run_id,
            metadata=metadata.report(evaluation.report, archive),
            tags=versioned,
        )
    )
    regression = metadata.regression(evaluation.report, run_id=None if in_run else run_id)
    events.append(regression.evaluation(keys.asset("report"), run_id if in_run else None))
    versions = latest_versions(instance, keys.asset("verdicts"))
    versions[run_id] = version  # what this evaluation is about to record
    prompts = metadata.prompts_check(version, versions)
    events.append(prompts.evaluation(keys.asset("verdicts"), None))
    return events


def record(evaluation: Evaluation, *, keys: ProjectKeys | None = None) -> None:
    """Report a finished run or rescore of the CLI to the project's Dagster instance."""
    keys = keys or keys_of(evaluation.paths.project_file)
    with project_instance(evaluation.paths) as instance:
        keys.add_run(instance, evaluation.archive.run_id)
        for event in evaluation_events(evaluation, instance, keys, launched_by="cli", in_run=False):
            instance.report_runless_asset_event(event)
