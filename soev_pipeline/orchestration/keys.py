"""Where one project's objects live in a Dagster instance that several projects may share.

The assets, checks, jobs, sensors and schedule are written once, with plain keys
(`evidence`, `verdicts`, ...). Each project is a code location of its own, so its jobs,
sensors and schedule have plain names there; what an instance shares across locations
needs the project's name, which `definitions` applies once: the asset keys (under the
prefix `<name>/`), the asset group, and the dynamic partitions of its runs
(`<name>__runs`). A project that `$SOEV_PROJECTS` does not list keeps the plain names.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from soev_pipeline.project.listing import PROJECT_NAME, listing_of

RUNS = "runs"
"""The name of the dynamic partitions of a project's runs (one per run id)."""
ASSET_TAG = "soev/asset"
"""The tag that names each asset by its plain name, whatever its prefix: the jobs select
their assets by it, so they are written once for every project."""
STEP_TAG = "soev/step"
"""The tag that names the step of a run (or `load`, `calibrate`) that makes each asset."""


def check_name(name: str | None) -> str | None:
    """A project's short name, refused unless Dagster can use it as a prefix.

    Raises:
        ValueError: the name is not lower-case letters, digits and '_' (40 at most).
    """
    if name is not None and not PROJECT_NAME.fullmatch(name):
        raise ValueError(
            f"project name {name!r} is not valid in Dagster: use lower-case letters, digits "
            "and '_', starting with a letter, at most 40 characters"
        )
    return name


def asset_key(name: str, prefix: str | None = None) -> dg.AssetKey:
    """The key of the asset `name` of a project: `name`, or `<prefix>/<name>`."""
    return dg.AssetKey([prefix, name]) if prefix else dg.AssetKey(name)


def runs_partitions(prefix: str | None = None) -> str:
    """The name of a project's run partitions: `runs`, or `<prefix>__runs`."""
    return f"{prefix}__{RUNS}" if prefix else RUNS


def prefix_of(project_file: Path) -> str | None:
    """The prefix of the project at `project_file`: its name when `$SOEV_PROJECTS` lists
    it, else None (the plain keys)."""
    listed = listing_of(project_file)
    return listed.name if listed is not None else None


def add_run(instance: dg.DagsterInstance, run_id: str, prefix: str | None = None) -> None:
    """Add `run_id` to a project's run partitions, unless it is there already."""
    name = runs_partitions(prefix)
    if not instance.has_dynamic_partition(name, run_id):
        instance.add_dynamic_partitions(name, [run_id])
