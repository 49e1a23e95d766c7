"""The sensor that notices an edit of the suites, the judge prompts or the labels on disk."""

import dagster as dg

from soev_pipeline.calibration import labels_version

from . import metadata
from .jobs import check_prompts, load_suites
from .record import latest, recorded_version
from .resources import SoevProject


@dg.sensor(
    name="prompts_watch",
    jobs=[check_prompts, load_suites],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records changed judge prompts, rubrics and labels (which makes the runs "
    "graded with the old ones stale), calibrates and probes the judge again, and records "
    "changed suites.",
)
def prompts_watch(context: dg.SensorEvaluationContext, project: SoevProject) -> dg.SensorResult:
    """Ask for `check_prompts` as soon as the prompt or label files on disk differ from the
    last recorded ones, and `load_suites` for each suite whose recorded digest is not the
    loaded one (on a new instance: every suite, so that the lineage starts complete).

    It hashes the files at every tick rather than trusting the loaded definitions, which
    keep the hashes of when the code location last loaded; the run it asks for loads the
    project anew, so it records and grades with the new files.
    """
    loaded, instance = project.loaded, context.instance
    requests = [
        dg.RunRequest(
            job_name=load_suites.name,
            partition_key=suite.name,
            run_key=f"suite-{suite.name}-{version}-after-{_last(instance, key, suite.name)}",
        )
        for suite in loaded.suites
        for key, version in [(project.key("suites"), metadata.suite_version(suite))]
        if recorded_version(instance, key, suite.name) != version
    ]
    prompts = loaded.prompts_version_on_disk()
    labels = labels_version(loaded.directory, loaded.project.labels)
    prompts_key, labels_key = project.key("judge_prompts"), project.key("labels")
    if (
        recorded_version(instance, prompts_key) != prompts
        or recorded_version(instance, labels_key) != labels
    ):
        after = f"{_last(instance, prompts_key)}.{_last(instance, labels_key)}"
        requests.append(
            dg.RunRequest(
                job_name=check_prompts.name, run_key=f"prompts-{prompts}-{labels}-after-{after}"
            )
        )
    if requests:
        return dg.SensorResult(run_requests=requests)
    return dg.SensorResult(
        skip_reason=f"the suites, prompts and labels are recorded as they are ({prompts})"
    )


def _last(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None) -> int:
    """The storage id of the latest record of `key` (0 for none): in a request's run key, so
    that a change back to an earlier version is asked for again, not taken for a repeat."""
    record = latest(instance, key, partition)
    return 0 if record is None else record.storage_id
