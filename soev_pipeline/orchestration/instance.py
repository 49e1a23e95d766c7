"""The Dagster instance that `soev-evals` and `make ui` share for a project.

The instance is `$DAGSTER_HOME` when set, else `.soev/dagster` beside the runs; the CLI
records its runs there, so they show in the UI (`make ui`, `dg dev`), and the UI's runs share it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from soev_pipeline.project import ProjectPaths

INSTANCE_CONFIG = """\
# The Dagster instance of a soev-pipeline project, shared by soev-evals and `make ui`.
telemetry:
  enabled: false
# The daemon (`dg dev` starts it) marks runs whose worker process died as failed.
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
# Runs launched from the UI (or by the sensors and the schedule) start at once, without a
# queue, whose daemon would take them up to a second later. A deployment shared by several
# users queues them, with a limit per assistant: see deploy/dagster.yaml.
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
# The prompts watch runs on threads, beside the schedule.
sensors:
  use_threads: true
  num_workers: 2
"""

STORAGE_READY = ".soev-storage-ready"
"""The file `ensure_instance` writes once the instance's storage is made."""


def ensure_instance(home: Path) -> Path:
    """Make the instance folder `home` with the default dagster.yaml, unless it has one, and
    its storage, once.

    Dagster makes a SQLite instance's databases on first use, and two processes that do so
    at the same moment (`make ui` and `soev-evals run` on a new project) can both stamp a
    database's schema version, which leaves the instance unusable. The first soev process
    makes them under a file lock, and marks that it did.
    """
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_CONFIG, encoding="utf-8")
    ready = home / STORAGE_READY
    if ready.exists():
        return home
    with (home / ".soev-storage.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            with dg.DagsterInstance.from_config(str(home)) as instance:
                instance.get_runs(limit=1)  # the run storage
                instance.fetch_materializations(dg.AssetKey("soev"), limit=1)  # the event index
                instance.all_instigator_state()  # the schedule storage
            ready.write_text("", encoding="utf-8")
    return home


@contextmanager
def project_instance(paths: ProjectPaths, *, close: bool = True) -> Iterator[dg.DagsterInstance]:
    """The Dagster instance the CLI and the UI share for the project's runs; `close` False
    leaves it open when the block ends, for the caller to `dispose` later."""
    home = ensure_instance(paths.dagster_home)
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        instance = dg.DagsterInstance.get()
        if not close:
            yield instance
            return
        with instance:
            yield instance
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous
