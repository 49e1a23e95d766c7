"""Build the Definitions of one evaluation project."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg

from .assets import (
    RUN_ASSETS_IO,
    attempt,
    build_report_asset,
    build_suites_asset,
    build_verdicts_asset,
    judge_prompts,
)
from .checks import build_prompts_check, build_prompts_watch
from .io import RunArchiveIOManager
from .jobs import build_jobs, build_nightly_schedule
from .requests import build_new_evaluation_job, build_request_sensor
from .resources import Progress, RuntimeResource, SoevProject, load_project


def build_definitions(
    project: SoevProject,
    *,
    progress: Progress | None = None,
    nightly_cron: str | None = None,
) -> dg.Definitions:
    """The assets, jobs, check and schedule of a loaded project.

    Its suite names partition `suites`, and the hashes of its prompts and rubrics make the
    code version of `verdicts`, so a changed prompt shows the verdicts graded with the old
    one as stale once the definitions reload.
    """
    loaded = project.loaded
    version = loaded.prompts_version
    suites = build_suites_asset([suite.name for suite in loaded.suites])
    verdicts = build_verdicts_asset(version)
    report = build_report_asset(version)
    system = urlsplit(loaded.project.system.url).netloc
    jobs = build_jobs(suites, judge_prompts, attempt, verdicts, report, system=system)
    new_evaluation = build_new_evaluation_job(project)
    return dg.Definitions(
        assets=[suites, judge_prompts, attempt, verdicts, report],
        asset_checks=[build_prompts_check(version)],
        jobs=[*jobs, new_evaluation],
        schedules=[build_nightly_schedule(new_evaluation, nightly_cron)],
        sensors=[
            build_request_sensor(new_evaluation, jobs[0]),
            build_prompts_watch(version, jobs[3]),
        ],
        resources={
            "project": project,
            RUN_ASSETS_IO: RunArchiveIOManager(project.runs),
            "progress": progress or Progress(),
            "runtime": RuntimeResource(),
        },
    )


def definitions_for(
    project_file: str | Path,
    runs_dir: str | Path | None = None,
    *,
    nightly_cron: str | None = None,
) -> dg.Definitions:
    """Load the project at `project_file` and build its definitions (a code location's)."""
    return build_definitions(load_project(project_file, runs_dir), nightly_cron=nightly_cron)
