"""Build the Definitions of one evaluation project, or of several in one code location."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dagster as dg

from soev_pipeline.project.listing import ListedProject
from soev_pipeline.runtime import RuntimeSession

from .assets import (
    RUN_ASSETS_IO,
    build_evidence_asset,
    build_judge_prompts_asset,
    build_report_asset,
    build_suites_asset,
    build_verdicts_asset,
)
from .checks import build_prompts_check, build_prompts_watch
from .io import RunArchiveIOManager
from .jobs import build_jobs, build_nightly_schedule
from .names import Names
from .requests import build_new_evaluation_job, build_request_sensor
from .resources import Progress, RuntimeResource, SharedRuntime, SoevProject, load_project


def build_definitions(
    project: SoevProject,
    *,
    progress: Progress | None = None,
    nightly_cron: str | None = None,
    session: RuntimeSession | None = None,
) -> dg.Definitions:
    """The assets, jobs, check and schedule of a loaded project.

    Its suite names partition `suites`, and the hashes of its prompts and rubrics make the
    code version of `verdicts`, so a changed prompt shows the verdicts graded with the old
    one as stale once the definitions reload. With `session`, the runs use that runtime
    session (the command's own) rather than opening one each.
    """
    return build_location([project], progress=progress, nightly_cron=nightly_cron, session=session)


def build_location(
    projects: Sequence[SoevProject],
    *,
    progress: Progress | None = None,
    nightly_cron: str | None = None,
    session: RuntimeSession | None = None,
) -> dg.Definitions:
    """The definitions of one code location serving `projects`, each under its own names."""
    parts: dict[str, list[Any]] = {
        "assets": [],
        "asset_checks": [],
        "jobs": [],
        "schedules": [],
        "sensors": [],
    }
    runtime = RuntimeResource() if session is None else SharedRuntime(session)
    resources: dict[str, Any] = {"progress": progress or Progress(), "runtime": runtime}
    seen: set[str] = set()
    for project in projects:
        names = project.names
        if names.prefix in seen:
            raise ValueError(f"two projects are named {names.prefix!r} in one location")
        seen.add(names.prefix)
        for kind, items in _project_parts(project, nightly_cron).items():
            parts[kind].extend(items)
        resources[names("project")] = project
        resources[names(RUN_ASSETS_IO)] = RunArchiveIOManager(project.runs)
    return dg.Definitions(
        assets=parts["assets"],
        asset_checks=parts["asset_checks"],
        jobs=parts["jobs"],
        schedules=parts["schedules"],
        sensors=parts["sensors"],
        resources=resources,
    )


def _project_parts(project: SoevProject, nightly_cron: str | None) -> dict[str, list[Any]]:
    loaded, names = project.loaded, project.names
    version = loaded.prompts_version
    suites = build_suites_asset([suite.name for suite in loaded.suites], names)
    judge_prompts = build_judge_prompts_asset(names)
    evidence = build_evidence_asset(names)
    verdicts = build_verdicts_asset(version, names)
    report = build_report_asset(version, names)
    system = urlsplit(loaded.project.system.url).netloc
    jobs = build_jobs(suites, judge_prompts, evidence, verdicts, report, system=system, names=names)
    new_evaluation = build_new_evaluation_job(project)
    return {
        "assets": [suites, judge_prompts, evidence, verdicts, report],
        "asset_checks": [build_prompts_check(version, names)],
        "jobs": [*jobs, new_evaluation],
        "schedules": [build_nightly_schedule(new_evaluation, nightly_cron, names)],
        "sensors": [
            build_request_sensor(new_evaluation, jobs[0], names),
            build_prompts_watch(version, jobs[3], names),
        ],
    }


def definitions_for(
    project_file: str | Path,
    runs_dir: str | Path | None = None,
    *,
    nightly_cron: str | None = None,
) -> dg.Definitions:
    """Load the project at `project_file` and build its definitions (a code location's)."""
    return build_definitions(load_project(project_file, runs_dir), nightly_cron=nightly_cron)


def location_for(
    listed: Sequence[ListedProject], *, nightly_cron: str | None = None
) -> dg.Definitions:
    """Load every listed project and build one location serving them all."""
    projects = [load_project(item.project_file, item.runs_dir, Names(item.name)) for item in listed]
    return build_location(projects, nightly_cron=nightly_cron)
