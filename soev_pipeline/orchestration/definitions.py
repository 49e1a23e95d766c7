"""The Definitions of one evaluation project: a code location of its own.

The assets, checks, jobs and sensor are written once (`assets`, `calibration`, `probes`,
`checks`, `jobs`, `sensors`); here a project gives them what is its own, in one place: the key
prefix and group of its name when several projects share an instance, its run partitions,
the suite names that partition `suites`, the code version of its grading, and the address
of its system on the jobs that talk to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import dagster as dg

from soev_pipeline.project import LoadedProject

from .assets import attempt_grade_aggregate, load, load_prompts
from .calibration import calibrate_judge, read_labels
from .checks import graded_with_current_prompts
from .jobs import (
    SYSTEM_TAG,
    check_prompts,
    evaluate,
    load_suites,
    new_evaluation,
    nightly_schedule,
    rescore,
)
from .keys import asset_key, check_name, prefix_of, runs_partitions
from .probes import probe_the_judge
from .resources import ArchiveOnly, SoevProject, load_project
from .sensors import prompts_watch
from .versions import code_version

A = TypeVar("A", bound=dg.AssetsDefinition)


def project_definitions(project: SoevProject, *, nightly_cron: str | None = None) -> dg.Definitions:
    """The assets, jobs, checks, sensor and schedule of a project."""
    loaded, prefix = project.loaded, project.name
    runs = dg.DynamicPartitionsDefinition(name=runs_partitions(prefix))
    suites = dg.StaticPartitionsDefinition([suite.name for suite in loaded.suites])

    def own(spec: dg.AssetSpec) -> dg.AssetSpec:
        """A spec with the project's partitions and code version."""
        name = spec.key.path[-1]
        partitions = {"suites": suites}.get(name, runs if spec.partitions_def else None)
        version = code_version(loaded, name) if spec.code_version else None
        return spec.replace_attributes(partitions_def=partitions, code_version=version)

    assets = [
        _prefixed(definition.map_asset_specs(own), prefix)
        for definition in (
            load,
            load_prompts,
            attempt_grade_aggregate,
            read_labels,
            calibrate_judge,
            probe_the_judge,
        )
    ]
    system = {SYSTEM_TAG: _system(loaded)}
    return dg.Definitions(
        assets=assets,
        asset_checks=[_prefixed(graded_with_current_prompts, prefix)],
        jobs=[
            _tagged(evaluate, system),
            rescore,
            load_suites,
            check_prompts,
            _tagged(new_evaluation, system),
        ],
        schedules=[nightly_schedule(nightly_cron)],
        sensors=[prompts_watch],
        resources={"project": project, "io_manager": ArchiveOnly()},
    )


def _prefixed(definition: A, prefix: str | None) -> A:
    """`definition` with its keys (and the keys of its dependencies) under `prefix`, in the
    group of that name; unchanged without a prefix."""
    if prefix is None:
        return definition
    keys: Sequence[dg.AssetKey] = [
        *definition.keys,
        *(dep.asset_key for spec in definition.specs for dep in spec.deps),
        *(check.asset_key for check in definition.check_keys),
    ]
    replaced = {key: asset_key(key.path[-1], prefix) for key in keys}
    return definition.with_attributes(  # type: ignore[return-value]
        asset_key_replacements=replaced,
        group_names_by_key=dict.fromkeys(definition.keys, prefix),
    )


def _tagged(job: Any, tags: dict[str, str]) -> Any:
    """`job` with `tags` on every run of it (none when the system has no address)."""
    if not all(tags.values()):
        return job
    if isinstance(job, dg.JobDefinition):
        return job.graph.to_job(
            name=job.name,
            description=job.description,
            executor_def=job.executor_def,
            tags={**job.tags, **tags},
        )
    return dg.define_asset_job(
        job.name,
        selection=job.selection,
        executor_def=job.executor_def,
        description=job.description,
        tags={**(job.tags or {}), **tags},
    )


def _system(loaded: LoadedProject) -> str:
    """The system's `host:port`, for the run tag `soev/system`: never its credentials."""
    return urlsplit(loaded.project.system.url).netloc.rpartition("@")[2]


def definitions_for(
    project_file: str | Path,
    runs_dir: str | Path | None = None,
    *,
    name: str | None = None,
    nightly_cron: str | None = None,
) -> dg.Definitions:
    """Load the project at `project_file` and build its definitions (a code location's).

    Its name (the key prefix) is `name`, else the one `$SOEV_PROJECTS` gives it, else none.
    """
    prefix = check_name(name) if name is not None else prefix_of(Path(project_file).resolve())
    loaded = load_project(project_file, runs_dir)
    return project_definitions(SoevProject.of(loaded, runs_dir, prefix), nightly_cron=nightly_cron)
