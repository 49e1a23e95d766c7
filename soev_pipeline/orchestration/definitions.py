"""The Definitions of one evaluation project: a code location of its own."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg

from .assets import build_assets
from .calibration import build_calibration_assets
from .checks import CHECK_PROMPTS_JOB, build_prompts_check, build_prompts_watch
from .jobs import LOAD_SUITES, SYSTEM_TAG, build_jobs, build_nightly_schedule
from .keys import ProjectKeys
from .requests import build_new_evaluation_job
from .resources import ArchiveOnly, ProjectResource, RuntimeResource, SoevProject, load_project


def build_definitions(project: SoevProject, *, nightly_cron: str | None = None) -> dg.Definitions:
    """The assets, jobs, checks, sensors and schedule of a loaded project.

    Its suite names partition `suites`, and the hashes of its prompts and rubrics make the
    code version of `verdicts` and `report`, so a changed prompt shows the runs graded with
    the old one as stale once the definitions reload.
    """
    loaded, keys = project.loaded, project.keys
    version = loaded.prompts_version
    system = _system(project)
    jobs = {job.name: job for job in build_jobs(keys, system=system)}
    new_evaluation = build_new_evaluation_job({SYSTEM_TAG: system} if system else None)
    return dg.Definitions(
        assets=[
            *build_assets(keys, [suite.name for suite in loaded.suites], version),
            *build_calibration_assets(keys, version),
        ],
        asset_checks=[build_prompts_check(keys, version)],
        jobs=[*jobs.values(), new_evaluation],
        schedules=[build_nightly_schedule(new_evaluation, nightly_cron)],
        sensors=[build_prompts_watch(keys, loaded, jobs[CHECK_PROMPTS_JOB], jobs[LOAD_SUITES])],
        resources={
            "project": ProjectResource.of(project),
            "runtime": RuntimeResource(),
            "io_manager": ArchiveOnly(),
        },
    )


def _system(project: SoevProject) -> str:
    """The system's `host:port`, for the run tag `soev/system`: never its credentials."""
    return urlsplit(project.loaded.project.system.url).netloc.rpartition("@")[2]


def definitions_for(
    project_file: str | Path,
    runs_dir: str | Path | None = None,
    *,
    nightly_cron: str | None = None,
    keys: ProjectKeys | None = None,
) -> dg.Definitions:
    """Load the project at `project_file` and build its definitions (a code location's)."""
    return build_definitions(load_project(project_file, runs_dir, keys), nightly_cron=nightly_cron)
