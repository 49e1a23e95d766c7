"""The resources: the evaluation project of a code location, and the IO manager that stores
nothing."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

from soev_pipeline.core.errors import ProjectError, SealChangedError
from soev_pipeline.project import LoadedProject, ProjectPaths, load

from .keys import asset_key, check_name, runs_partitions


def load_project(project_file: Path | str, runs_dir: Path | str | None = None) -> LoadedProject:
    """Load the project for Dagster, with a changed seal reported by its count alone.

    `SealChangedError`'s own message lists the changed test cases; Dagster would keep it in
    its storage and show it in the UI, so here it becomes a `ProjectError` that counts
    them, raised outside the handler so that no chained exception carries the ids.
    """
    paths = ProjectPaths.of(project_file, runs_dir)
    message = None
    try:
        return load(paths.project_file, suite_cache=paths.suite_cache)
    except SealChangedError as exc:
        message = exc.aggregate_message
    raise ProjectError(message)


class SoevProject(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The evaluation project of this code location: where it is, where its runs are, and
    its name when several projects share the Dagster instance.

    The location loads the project once to build its definitions and hands it over
    (`SoevProject.of`); a resource made from config alone loads it on first use.
    """

    project_file: str = Field(description="The path of the project's project.yaml.")
    runs_dir: str | None = Field(
        default=None, description="Where runs are archived; empty for runs/ beside the project."
    )
    name: str | None = Field(
        default=None,
        description="The project's short name when several projects share the instance: "
        "the prefix of its asset keys and run partitions; empty for the plain ones.",
    )
    _loaded: LoadedProject | None = PrivateAttr(default=None)

    @classmethod
    def of(
        cls, loaded: LoadedProject, runs_dir: Path | str | None = None, name: str | None = None
    ) -> SoevProject:
        """The resource of a loaded project."""
        paths = ProjectPaths.of(loaded.path, runs_dir)
        resource = cls(
            project_file=str(paths.project_file), runs_dir=str(paths.runs), name=check_name(name)
        )
        resource._loaded = loaded
        return resource

    @property
    def loaded(self) -> LoadedProject:
        if self._loaded is None:
            self._loaded = load_project(self.project_file, self.runs_dir)
        return self._loaded

    @property
    def paths(self) -> ProjectPaths:
        return ProjectPaths.of(self.project_file, self.runs_dir)

    def key(self, name: str) -> dg.AssetKey:
        """The key of this project's asset `name` in the instance."""
        return asset_key(name, self.name)

    @property
    def runs_partitions(self) -> str:
        """The name of this project's run partitions in the instance."""
        return runs_partitions(self.name)


class ArchiveOnly(dg.ConfigurableIOManager):
    """Stores nothing: every step writes to the run archive and reads from it.

    Bound as `io_manager` so that no job falls back to Dagster's pickling default: the
    assets return their metadata only, and an output that is not empty is a bug, refused
    here rather than pickled beside the instance.
    """

    def handle_output(self, context: dg.OutputContext, obj: object) -> None:
        if obj is not None:
            raise TypeError(f"{context.step_key} returned a value; the run archive holds outputs")

    def load_input(self, context: dg.InputContext) -> object:
        raise TypeError(f"{context.name} was asked for; inputs are read from the run archive")
