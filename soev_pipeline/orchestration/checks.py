"""Which verdict partitions were graded with prompts that changed since, and the sensor that
notices a prompt edit on disk."""

import dagster as dg

from soev_pipeline.project import LoadedProject

from . import metadata
from .calibration import labels_request
from .keys import ProjectKeys

CHECK_PROMPTS_JOB = "check_prompts"


def latest_versions(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, str | None]:
    """The prompts version of the latest materialization of each partition of the asset
    `key`: its code version when a Dagster run made it, its `soev/prompts_version` tag when
    the CLI reported it."""
    latest: dict[str, str | None] = {}
    cursor = None
    while True:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key), limit=500, cursor=cursor, ascending=True
        )
        for record in result.records:
            materialization = record.asset_materialization
            if materialization is None or materialization.partition is None:
                continue
            tags = materialization.tags or {}
            latest[materialization.partition] = tags.get(
                metadata.CODE_VERSION_TAG, tags.get(metadata.PROMPTS_VERSION_TAG)
            )
        if not result.has_more:
            return latest
        cursor = result.cursor


def build_prompts_check(keys: ProjectKeys, current: str) -> dg.AssetChecksDefinition:
    """A check on `verdicts` that lists the run partitions graded with outdated prompts."""

    @dg.asset_check(
        asset=keys.asset("verdicts"),
        name=metadata.GRADED_WITH_CURRENT_PROMPTS,
        blocking=False,
        description=(
            "Fails when a run's latest verdicts were graded with judge prompts or rubrics "
            "that have changed since; rescore those runs."
        ),
    )
    def graded_with_current_prompts(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        versions = latest_versions(context.instance, keys.asset("verdicts"))
        return metadata.prompts_check(current, versions).result()

    return graded_with_current_prompts


def build_prompts_watch(
    keys: ProjectKeys,
    loaded: LoadedProject,
    check_prompts: "dg.UnresolvedAssetJobDefinition",
    load_suites: "dg.UnresolvedAssetJobDefinition",
) -> dg.SensorDefinition:
    """A sensor that runs `check_prompts` as soon as the prompt files on disk differ from the
    recorded ones, and its `labels` and `judge_calibration` alone when only the label files do;
    and `load_suites` for each suite whose recorded digest is not the loaded one (on a new
    instance: every suite, so that the lineage starts with its inputs recorded).

    It hashes the files at every tick rather than trusting the loaded definitions, which
    keep the hashes of when the code location last loaded: so a prompt or rubric edit shows
    on `judge_prompts` and fails `graded_with_current_prompts` within a tick, without a
    reload. (The run it starts loads the definitions anew, with the new hashes.)
    """

    @dg.sensor(
        name="prompts_watch",
        jobs=[check_prompts, load_suites],
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Records changed judge prompts and rubrics, and checks which runs were "
        "graded with the old ones; calibrates the judge again when they or the labels change.",
    )
    def prompts_watch(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        requests = [
            dg.RunRequest(
                job_name=load_suites.name,
                partition_key=suite.name,
                run_key=f"suite-{suite.name}-{suite.digest()[:16]}",
            )
            for suite in loaded.suites
            if metadata.recorded_suite_digest(context.instance, keys.asset("suites"), suite.name)
            != suite.digest()
        ]
        current = loaded.prompts_version_on_disk()
        recorded = metadata.recorded_prompts_version(context.instance, keys.asset("judge_prompts"))
        if recorded != current:
            requests.append(
                dg.RunRequest(job_name=check_prompts.name, run_key=f"prompts-{current}")
            )
        else:
            labels = labels_request(context.instance, keys, loaded)
            if labels is not None:  # only the labels changed: calibrate again, nothing else
                requests.append(labels.with_replaced_attrs(job_name=check_prompts.name))
        if requests:
            return dg.SensorResult(run_requests=requests)
        return dg.SensorResult(
            skip_reason=f"the suites, prompts and labels are recorded as they are ({current})"
        )

    return prompts_watch
