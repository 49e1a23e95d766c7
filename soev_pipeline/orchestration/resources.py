"""Resources: the loaded project the assets evaluate, its runtime session, and progress."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

import dagster as dg
from pydantic import PrivateAttr

from soev_pipeline.core.errors import ProjectError, SealChangedError
from soev_pipeline.project import LoadedProject, ProjectPaths, load
from soev_pipeline.run.progress import Progress
from soev_pipeline.run.service import AttemptedRun
from soev_pipeline.runtime import RuntimeSession

from .names import PLAIN, Names, names_of

__all__ = [
    "Progress",
    "RuntimeResource",
    "SessionHolder",
    "SharedRuntime",
    "SoevProject",
    "load_project",
]


class SoevProject:
    """The evaluation project of a code location: loaded once, with its paths.

    The definitions are built from it, and every asset gets it as the `project` resource,
    so a command (or a Dagster run process) reads the project's files once. `names` are
    the names of its Dagster objects: plain, or those of one project among several.
    """

    def __init__(self, loaded: LoadedProject, paths: ProjectPaths, names: Names = PLAIN) -> None:
        self.loaded = loaded
        self.paths = paths
        self.names = names
        self.head_starts: dict[str, Future[AttemptedRun]] = {}
        """Runs whose attempts the command started before its Dagster run did (the CLI
        attempts while Dagster loads): the `attempt` step waits for them and records them
        instead of attempting."""

    @property
    def runs(self) -> Path:
        return self.paths.runs

    @property
    def state(self) -> Path:
        return self.paths.state


def load_project(
    project_file: Path | str, runs_dir: Path | str | None = None, names: Names | None = None
) -> SoevProject:
    """Load the project for Dagster, with a changed seal reported by its count alone.

    `SealChangedError`'s own message lists the changed test cases; Dagster would keep it in
    its storage and show it in the UI, so here it becomes a `ProjectError` that counts
    them, raised outside the handler so that no chained exception carries the ids.

    The Dagster names are `names`, else those `$SOEV_PROJECTS` gives the project, else
    the plain ones.
    """
    paths = ProjectPaths.of(project_file, runs_dir)
    names = names if names is not None else names_of(paths.project_file)
    message = None
    try:
        return SoevProject(load(paths.project_file, suite_cache=paths.suite_cache), paths, names)
    except SealChangedError as exc:
        message = exc.aggregate_message
    raise ProjectError(message)


class SessionHolder(Protocol):
    """What the ops need of the `runtime` resource: the session of the run."""

    @property
    def session(self) -> RuntimeSession: ...


class SharedRuntime:
    """A runtime session that the command opened itself and lends to its Dagster run: the
    run's steps use it, and the command closes it when it is done."""

    def __init__(self, session: RuntimeSession) -> None:
        self.session = session


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
