"""The names of one project's Dagster objects, so that one code location can serve several.

A location with one project uses the plain names of SPEC.md section 1 (`suites`,
`evidence`, `verdicts`, `report`; the jobs `evaluate` and `rescore`; the partitions
`runs`). In a location with several projects (see `soev_pipeline.project.listing`),
each project's names carry its short name: asset keys `<name>/evidence`, the group
`<name>`, the jobs, ops, sensors, schedules and resources `<name>__evaluate`, and the run
partitions `<name>__runs`. The CLI builds the same names for the same project, so its runs
land on the keys the UI shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import dagster as dg

from soev_pipeline.project.listing import PROJECT_NAME, listing_of


@dataclass(frozen=True)
class Names:
    """The Dagster names of one project: plain when `prefix` is empty."""

    prefix: str = ""

    def __post_init__(self) -> None:
        if self.prefix and not PROJECT_NAME.fullmatch(self.prefix):
            raise ValueError(
                f"project name {self.prefix!r} is not valid in Dagster: use lower-case "
                "letters, digits and '_', starting with a letter, at most 40 characters"
            )

    def __call__(self, name: str) -> str:
        """The name of a job, op, sensor, schedule or resource."""
        return f"{self.prefix}__{name}" if self.prefix else name

    def key(self, name: str) -> dg.AssetKey:
        """The key of an asset: `name`, or `prefix/name`."""
        return dg.AssetKey([self.prefix, name]) if self.prefix else dg.AssetKey(name)

    @property
    def group(self) -> str | None:
        """The asset group: the project's name, or Dagster's default group."""
        return self.prefix or None

    @cached_property
    def runs_partitions(self) -> dg.DynamicPartitionsDefinition:
        """The dynamic partitions of this project's runs."""
        return dg.DynamicPartitionsDefinition(name=self("runs"))

    def add_run(self, instance: dg.DagsterInstance, run_id: str) -> None:
        """Add `run_id` to this project's run partitions, unless it is there already."""
        name = self("runs")
        if not instance.has_dynamic_partition(name, run_id):
            instance.add_dynamic_partitions(name, [run_id])


PLAIN = Names()


def names_of(project_file: Path) -> Names:
    """The names of the project at `project_file`: its own when `$SOEV_PROJECTS` lists it."""
    listed = listing_of(project_file)
    return Names(listed.name) if listed is not None else PLAIN
