"""The check that lists the runs graded with prompts that have changed since.

Dagster shows a partition stale on its own page only; this check says it for the asset as
a whole: which run partitions' latest verdicts were graded with judge prompts or rubrics
other than the ones last recorded.
"""

import dagster as dg

from . import metadata
from .record import latest_prompts_versions, recorded_version
from .resources import SoevProject


@dg.asset_check(
    asset="verdicts",
    name=metadata.GRADED_WITH_CURRENT_PROMPTS,
    blocking=False,
    description=(
        "Fails (severity WARN) when a run's latest verdicts were graded with judge prompts or "
        "rubrics that have changed since; rescore those runs."
    ),
)
def graded_with_current_prompts(
    context: dg.AssetCheckExecutionContext, project: SoevProject
) -> dg.AssetCheckResult:
    """Compare each run's prompts version with the one `judge_prompts` last recorded."""
    instance = context.instance
    current = recorded_version(instance, project.key("judge_prompts"))
    versions = latest_prompts_versions(instance, project.key("verdicts"))
    outcome = metadata.prompts_check(current or project.loaded.prompts_version, versions)
    return outcome.result(project.key("verdicts"))
