"""Record a run of the CLI in the project's Dagster instance.

`soev-evals run` and `rescore` run the steps of `soev_pipeline.api` in their own process;
this module then reports what they made as materializations of the project's assets
(`suites` whose digest changed, `judge_prompts` when they changed, `evidence`, `verdicts`
and `report` of the run's partition) and the evaluations of their checks, with the same
metadata as a run launched from the UI. The run shows in the asset pages, plots and checks
of `dagster dev`; since no Dagster run executed it, it is not in the Runs list
(docs/architecture.md says why: this is the faster of the two ways to join the CLI and
Dagster, by measurement).

Staleness: a reported materialization carries no data provenance (Dagster writes that only
inside its runs), so Dagster judges it by time, which is what this project means by stale:
`verdicts` of a run are stale once `judge_prompts` was materialized after them (a prompt or
rubric changed: the prompts watch, or the next command, records that), `evidence` once a
suite it ran changed. The prompts version of the verdicts goes in the tag
`soev/prompts_version`, which `graded_with_current_prompts` reads as it reads the code
version of a UI run's verdicts.
"""

from __future__ import annotations

import dagster as dg

from soev_pipeline.api import Evaluation

from . import metadata
from .checks import latest_versions, recorded_prompts_version
from .instance import project_instance
from .keys import ProjectKeys, keys_of

LAUNCHED_BY = "soev/launched_by"


def record(evaluation: Evaluation, *, keys: ProjectKeys | None = None) -> None:
    """Report the materializations and check evaluations of a finished run or rescore."""
    loaded, paths, archive = evaluation.loaded, evaluation.paths, evaluation.archive
    keys = keys or keys_of(paths.project_file)
    run_id, version = archive.run_id, loaded.prompts_version
    tags = {LAUNCHED_BY: "cli"}
    versioned = {**tags, metadata.PROMPTS_VERSION_TAG: version}
    with project_instance(paths) as instance:
        keys.add_run(instance, run_id)
        manifest = archive.manifest()
        for name in manifest.suites:
            suite = loaded.suite(name)
            if _recorded_digest(instance, keys.asset("suites"), name) != suite.digest():
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(
                        keys.asset("suites"),
                        partition=name,
                        metadata=metadata.suite(loaded, suite),
                        tags=tags,
                    )
                )
        if recorded_prompts_version(instance, keys.asset("judge_prompts")) != version:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    keys.asset("judge_prompts"),
                    metadata=metadata.prompts(loaded),
                    tags=tags,
                )
            )
        if evaluation.attempted is not None:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    keys.asset("evidence"),
                    partition=run_id,
                    metadata=metadata.evidence(evaluation.attempted),
                    tags=tags,
                )
            )
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                keys.asset("verdicts"),
                partition=run_id,
                metadata=metadata.verdicts(evaluation.scoring, version),
                tags=versioned,
            )
        )
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                keys.asset("report"),
                partition=run_id,
                metadata=metadata.report(evaluation.report, archive),
                tags=versioned,
            )
        )
        # Reported for the asset, not the partition: Dagster 1.13 stores one runless check
        # evaluation per partition only (a second, after a rescore, breaks a unique key), so
        # the check names the run in its metadata and shows the latest CLI command's outcome.
        regression = metadata.regression(evaluation.report.previous, run_id=run_id)
        instance.report_runless_asset_event(regression.evaluation(keys.asset("report"), None))
        prompts = metadata.prompts_check(version, latest_versions(instance, keys.asset("verdicts")))
        instance.report_runless_asset_event(prompts.evaluation(keys.asset("verdicts"), None))


def _recorded_digest(instance: dg.DagsterInstance, key: dg.AssetKey, suite: str) -> str | None:
    result = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[suite]), limit=1
    )
    latest = result.records[0].asset_materialization if result.records else None
    recorded = latest.metadata.get("digest") if latest is not None else None
    value = recorded.value if isinstance(recorded, dg.TextMetadataValue) else recorded
    return value if isinstance(value, str) else None
