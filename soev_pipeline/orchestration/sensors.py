"""The sensor that notices an edit of the suites, the judge prompts or the labels on disk."""

import dagster as dg

from soev_pipeline.calibration import labels_version

from . import metadata
from .jobs import check_prompts, load_suites
from .record import recorded_version
from .resources import SoevProject


@dg.sensor(
    name="prompts_watch",
    jobs=[check_prompts, load_suites],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records changed judge prompts, rubrics and labels (which makes the runs "
    "graded with the old ones stale), calibrates the judge again, and records changed suites.",
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
            run_key=f"suite-{suite.name}-{suite.digest()[:16]}",
        )
        for suite in loaded.suites
        if recorded_version(instance, project.key("suites"), suite.name)
        != metadata.suite_version(suite)
    ]
    prompts = loaded.prompts_version_on_disk()
    labels = labels_version(loaded.directory, loaded.project.labels)
    if (
        recorded_version(instance, project.key("judge_prompts")) != prompts
        or recorded_version(instance, project.key("labels")) != labels
    ):
        requests.append(
            dg.RunRequest(job_name=check_prompts.name, run_key=f"prompts-{prompts}-{labels}")
        )
    if requests:
        return dg.SensorResult(run_requests=requests)
    return dg.SensorResult(
        skip_reason=f"the suites, prompts and labels are recorded as they are ({prompts})"
    )
