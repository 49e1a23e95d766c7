"""Where one project's objects live in a Dagster instance that several projects may share.

Each project is a code location of its own (see `orchestration.location`): its jobs,
sensors, schedule and resources have plain names there. What an instance shares across
locations needs the project's name: the asset keys (under the prefix `<name>/`), the asset
group, and the dynamic partitions of its runs (`<name>__runs`). A project that
`$SOEV_PROJECTS` does not list keeps the plain names of SPEC.md (`evidence`, `runs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import dagster as dg

from soev_pipeline.project.listing import PROJECT_NAME, listing_of


@dataclass(frozen=True)
class ProjectKeys:
    """The asset keys, group and run partitions of one project; `prefix` is its name when
    several projects share an instance."""

    prefix: str | None = None

    def __post_init__(self) -> None:
        if self.prefix is not None and not PROJECT_NAME.fullmatch(self.prefix):
            raise ValueError(
                f"project name {self.prefix!r} is not valid in Dagster: use lower-case "
                "letters, digits and '_', starting with a letter, at most 40 characters"
            )

    def asset(self, name: str) -> dg.AssetKey:
        """The key of the asset `name`: `name`, or `<prefix>/<name>`."""
        return dg.AssetKey([self.prefix, name]) if self.prefix else dg.AssetKey(name)

    @property
    def group(self) -> str | None:
        """The asset group: the project's name, or Dagster's default group."""
        return self.prefix

    @cached_property
    def runs(self) -> dg.DynamicPartitionsDefinition:
        """The dynamic partitions of this project's runs (one per run id)."""
        return dg.DynamicPartitionsDefinition(
            name=f"{self.prefix}__runs" if self.prefix else "runs"
        )

    def add_run(self, instance: dg.DagsterInstance, run_id: str) -> None:
        """Add `run_id` to this project's run partitions, unless it is there already."""
        name = self.runs.name
        assert name is not None
        if not instance.has_dynamic_partition(name, run_id):
            instance.add_dynamic_partitions(name, [run_id])


def keys_of(project_file: Path) -> ProjectKeys:
    """The keys of the project at `project_file`: under its name when `$SOEV_PROJECTS`
    lists it, else the plain ones."""
    listed = listing_of(project_file)
    return ProjectKeys(listed.name if listed is not None else None)
