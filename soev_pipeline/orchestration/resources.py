"""Resources: the evaluation project of a code location, and the runtime of one Dagster run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

from soev_pipeline.core.errors import ProjectError, SealChangedError
from soev_pipeline.project import LoadedProject, ProjectPaths, load
from soev_pipeline.runtime import RuntimeSession

from .keys import ProjectKeys, keys_of


@dataclass(frozen=True)
class SoevProject:
    """A loaded project with its paths and its Dagster keys: what a code location serves."""

    loaded: LoadedProject
    paths: ProjectPaths
    keys: ProjectKeys


def load_project(
    project_file: Path | str, runs_dir: Path | str | None = None, keys: ProjectKeys | None = None
) -> SoevProject:
    """Load the project for Dagster, with a changed seal reported by its count alone.

    `SealChangedError`'s own message lists the changed test cases; Dagster would keep it in
    its storage and show it in the UI, so here it becomes a `ProjectError` that counts
    them, raised outside the handler so that no chained exception carries the ids.

    The keys are `keys`, else those `$SOEV_PROJECTS` gives the project, else the plain ones.
    """
    paths = ProjectPaths.of(project_file, runs_dir)
    keys = keys if keys is not None else keys_of(paths.project_file)
    message = None
    try:
        return SoevProject(load(paths.project_file, suite_cache=paths.suite_cache), paths, keys)
    except SealChangedError as exc:
        message = exc.aggregate_message
    raise ProjectError(message)


class ProjectResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The evaluation project of this code location.

    The location loads the project once to build its definitions and hands it to this
    resource; a resource made from config alone loads it on first use.
    """

    project_file: str = Field(description="The path of the project's project.yaml.")
    runs_dir: str | None = Field(
        default=None, description="Where runs are archived; empty for runs/ beside the project."
    )
    _project: SoevProject | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, project: SoevProject) -> ProjectResource:
        resource = cls(
            project_file=str(project.paths.project_file), runs_dir=str(project.paths.runs)
        )
        resource._project = project
        return resource

    @property
    def project(self) -> SoevProject:
        if self._project is None:
            self._project = load_project(self.project_file, self.runs_dir)
        return self._project

    @property
    def loaded(self) -> LoadedProject:
        return self.project.loaded

    @property
    def paths(self) -> ProjectPaths:
        return self.project.paths

    @property
    def asset_keys(self) -> ProjectKeys:
        return self.project.keys


class RuntimeResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The runtime session of one Dagster run: the provider is opened once for all its steps."""

    _session: RuntimeSession | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._session = RuntimeSession()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    @property
    def session(self) -> RuntimeSession:
        if self._session is None:
            self._session = RuntimeSession()
        return self._session


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
