"""Asset checks: which verdict partitions were graded with prompts that changed since."""

import dagster as dg

from .names import PLAIN, Names

CODE_VERSION_TAG = "dagster/code_version"


def latest_versions(instance: dg.DagsterInstance, names: Names = PLAIN) -> dict[str, str | None]:
    """The code version of the latest materialization of each verdicts partition."""
    latest: dict[str, str | None] = {}
    cursor = None
    key = names.key("verdicts")
    while True:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key), limit=500, cursor=cursor, ascending=True
        )
        for record in result.records:
            materialization = record.asset_materialization
            if materialization is None or materialization.partition is None:
                continue
            latest[materialization.partition] = (
                materialization.tags.get(CODE_VERSION_TAG) if materialization.tags else None
            )
        if not result.has_more:
            return latest
        cursor = result.cursor


def build_prompts_check(current: str, names: Names = PLAIN) -> dg.AssetChecksDefinition:
    """A check on `verdicts` that lists the run partitions graded with outdated prompts."""

    @dg.asset_check(
        asset=names.key("verdicts"),
        name="graded_with_current_prompts",
        blocking=False,
        description=(
            "Fails when a run's latest verdicts were graded with judge prompts or rubrics "
            "that have changed since; rescore those runs."
        ),
    )
    def graded_with_current_prompts(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        versions = latest_versions(context.instance, names)
        outdated = sorted(run for run, version in versions.items() if version != current)
        return dg.AssetCheckResult(
            passed=not outdated,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "prompts_version": current,
                "graded_runs": len(versions),
                "outdated_runs": len(outdated),
                "outdated": dg.MetadataValue.md(
                    "\n".join(f"- `{run}`" for run in outdated) or "none"
                ),
            },
            description=(
                f"{len(outdated)} of {len(versions)} runs graded with outdated prompts"
                if outdated
                else "every run was graded with the current prompts"
            ),
        )

    return graded_with_current_prompts


PROMPTS_CHECK_JOB = "check_prompts"


def recorded_prompts_version(instance: dg.DagsterInstance, names: Names = PLAIN) -> str | None:
    """The prompts version of the latest `judge_prompts` materialization, or None."""
    result = instance.fetch_materializations(names.key("judge_prompts"), limit=1)
    if not result.records:
        return None
    materialization = result.records[0].asset_materialization
    value = materialization.metadata.get("prompts_version") if materialization else None
    recorded = getattr(value, "value", value)
    return recorded if isinstance(recorded, str) else None


def build_prompts_watch(
    current: str, check_prompts: "dg.UnresolvedAssetJobDefinition", names: Names = PLAIN
) -> dg.SensorDefinition:
    """A sensor that runs `check_prompts` as soon as the prompts differ from the recorded ones.

    So when a judge prompt or rubric changes (and the code location reloads), the UI shows
    the new hashes on `judge_prompts` and the failing `graded_with_current_prompts` check on
    `verdicts` without anyone running them by hand.
    """

    @dg.sensor(
        name=names("prompts_watch"),
        job=check_prompts,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Records changed judge prompts and rubrics, and checks which runs were "
        "graded with the old ones.",
    )
    def prompts_watch(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        recorded = recorded_prompts_version(context.instance, names)
        if recorded == current:
            return dg.SkipReason(f"the prompts are recorded as they are ({current})")
        return dg.RunRequest(run_key=f"prompts-{current}")

    return prompts_watch
