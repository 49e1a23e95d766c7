"""Resources: the project the assets evaluate, and where the CLI shows progress."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from soev_pipeline.cli.loading import LoadedProject, load_cached
from soev_pipeline.cli.runtimes import state_dir
from soev_pipeline.core.errors import ProjectError, SealChangedError
from soev_pipeline.run.progress import Progress
from soev_pipeline.run.session import RuntimeSession

__all__ = ["Progress", "RuntimeResource", "SoevProject"]


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


class SoevProject(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The evaluation project: its project.yaml and the folder of its runs."""

    project_path: str
    runs_dir: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.project_path).resolve()

    @property
    def runs(self) -> Path:
        return Path(self.runs_dir).resolve() if self.runs_dir else self.path.parent / "runs"

    @property
    def state(self) -> Path:
        return state_dir(self.runs)

    def load(self) -> LoadedProject:
        """The loaded project; reloaded only when one of its files changed."""
        return load_sealed(self.path)


def load_sealed(path: Path) -> LoadedProject:
    """`load_cached`, with a changed seal reported by its count alone.

    `SealChangedError`'s own message lists the changed test cases; Dagster would keep it in
    the event log and show it in the UI, so here it becomes a `ProjectError` that counts
    them, raised outside the handler so that no chained exception carries the ids.
    """
    message = None
    try:
        return load_cached(path)
    except SealChangedError as exc:
        message = exc.aggregate_message
    raise ProjectError(message)
