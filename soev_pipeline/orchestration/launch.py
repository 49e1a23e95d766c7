"""Launch the jobs from the CLI in the same Dagster instance as the UI.

The instance is `$DAGSTER_HOME` when set, else `.soev/dagster` beside the runs; the runs
go in its run history, so a run started here shows in `dagster dev` and the other way round.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.project import ProjectPaths
from soev_pipeline.run.service import AttemptedRun
from soev_pipeline.runtime import RuntimeSession

from .config import SplitChoice
from .definitions import build_definitions
from .jobs import EVALUATE, LOAD_SUITES, RESCORE
from .resources import Progress, SoevProject

QUIET: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
LAUNCHED_BY, PID, HOST = "soev/launched_by", "soev/pid", "soev/host"
Notice = Callable[[str], None]


INSTANCE_CONFIG = """\
# The Dagster instance of a soev-pipeline project, shared by soev-evals and `make ui`.
telemetry:
  enabled: false
# The daemon (`dagster dev` starts it) marks runs whose worker process died as failed.
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
# Runs launched from the UI (or by the sensors and the schedule) start at once, without a
# queue, whose daemon would take them up to a second later. A deployment shared by several
# users queues them, with a limit per assistant: see deploy/dagster.yaml.
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
# `start_requested_evaluations` answers a `new_evaluation` within a second or two.
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
    import fcntl

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
def project_instance(paths: ProjectPaths) -> Iterator[dg.DagsterInstance]:
    """The Dagster instance the CLI and the UI share for the project's runs."""
    home = ensure_instance(paths.dagster_home)
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as instance:
            yield instance
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_orphaned_runs(instance: dg.DagsterInstance) -> int:
    """Mark the CLI's runs whose process is gone (killed with kill -9, say) as failed.

    Such a run stays STARTED in Dagster forever otherwise. Only runs started by the CLI on
    this host are judged, by the process id they recorded; the archive keeps their
    evidence, and `soev-evals run --resume` goes on with them.
    """
    host = socket.gethostname()
    records = instance.get_run_records(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED], tags={LAUNCHED_BY: "cli", HOST: host}
        )
    )
    failed = 0
    for record in records:
        run = record.dagster_run
        pid = run.tags.get(PID, "")
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            message = f"the soev-evals process {pid} that ran it is gone; resume the run instead"
            _report_failed(instance, run, message)
            failed += 1
    return failed


def _report_failed(instance: dg.DagsterInstance, run: dg.DagsterRun, message: str) -> None:
    """Mark `run` failed, also when its process died while it set up the run's event log.

    A SQLite instance keeps each run's events in a file of its own, made and stamped by the
    run's first event; a process killed in the middle leaves it half made, and every write
    to it fails. That file is put aside (renamed `*.damaged`, not deleted) and the failure
    recorded in a new one.
    """
    try:
        instance.report_run_failed(run, message)
        return
    except Exception:
        path_for = getattr(instance.event_log_storage, "path_for_shard", None)
        shard = Path(path_for(run.run_id)) if callable(path_for) else None
        if shard is None or not shard.exists():
            raise
    for suffix in ("", "-wal", "-shm", "-journal"):
        part = shard.with_name(shard.name + suffix)
        if part.exists():
            part.replace(part.with_name(part.name + ".damaged"))
    instance.report_run_failed(run, message)


def _report_orphans(instance: dg.DagsterInstance, notice: Notice | None) -> None:
    failed = fail_orphaned_runs(instance)
    if failed and notice is not None:
        noun = "run" if failed == 1 else "runs"
        notice(f"marked {failed} Dagster {noun} whose soev-evals process is gone as failed")


def _tags(**extra: str) -> dict[str, str]:
    return {LAUNCHED_BY: "cli", PID: str(os.getpid()), HOST: socket.gethostname(), **extra}


def _changed_suites(
    instance: dg.DagsterInstance, project: SoevProject, names: Sequence[str]
) -> list[str]:
    """The suites whose digest differs from their latest `suites` materialization."""
    loaded = project.loaded
    changed = []
    for name in names:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=project.names.key("suites"), asset_partitions=[name]),
            limit=1,
        )
        latest = result.records[0].asset_materialization if result.records else None
        recorded = latest.metadata.get("digest") if latest is not None else None
        digest = getattr(recorded, "value", recorded)
        if digest != loaded.suite(name).digest():
            changed.append(name)
    return changed


def evaluate(
    project: SoevProject,
    run_id: str,
    *,
    suites: Sequence[str],
    split: str | None,
    k: int,
    runtime: str | None,
    resume: bool,
    progress: Progress | None = None,
    notice: Notice | None = None,
    attempted: Future[AttemptedRun] | None = None,
    session: RuntimeSession | None = None,
) -> dg.ExecuteInProcessResult:
    """Load the selected suites, then run `evaluate` on the run's partition.

    `attempted` is the run's attempt phase when the caller started it already (the CLI
    does, while Dagster loads): the `attempt` step then waits for it and records it
    rather than attempting. The steps use the caller's runtime `session` when given.
    Raises the step's own exception when a step fails (a `ProjectError`, say).
    """
    defs = build_definitions(project, progress=progress, session=session)
    if attempted is not None:
        project.head_starts[run_id] = attempted
    named = project.names
    selected = list(suites) or [suite.name for suite in project.loaded.suites]
    with project_instance(project.paths) as instance:
        _report_orphans(instance, notice)
        load_suites = defs.resolve_job_def(named(LOAD_SUITES))
        for name in _changed_suites(instance, project, selected):
            load_suites.execute_in_process(instance=instance, partition_key=name, run_config=QUIET)
        project.names.add_run(instance, run_id)
        run_config = _evaluate_config(project, suites, split, k, runtime, resume)
        return defs.resolve_job_def(named(EVALUATE)).execute_in_process(
            instance=instance,
            partition_key=run_id,
            run_config=run_config,
            tags=_tags(),
        )


def _evaluate_config(
    project: SoevProject,
    suites: Sequence[str],
    split: str | None,
    k: int,
    runtime: str | None,
    resume: bool,
) -> dict[str, Any]:
    named = project.names
    config = {
        "suites": list(suites),
        "split": SplitChoice.of(split).value,
        "k": k,
        "runtime": runtime,
        "resume": resume,
    }
    return {
        **QUIET,
        "ops": {
            named("attempt"): {"config": config},
            named("grade"): {"config": {"offline": False, "runtime": runtime}},
            named("aggregate"): {"config": {"runtime": runtime}},
        },
    }


def rescore(
    project: SoevProject,
    run_id: str,
    *,
    offline: bool,
    runtime: str | None,
    progress: Progress | None = None,
    notice: Notice | None = None,
) -> dg.ExecuteInProcessResult:
    """Re-materialize `verdicts` and `report` of a run from its archived evidence."""
    defs = build_definitions(project, progress=progress)
    with project_instance(project.paths) as instance:
        _report_orphans(instance, notice)
        project.names.add_run(instance, run_id)
        run_config = {
            **QUIET,
            "ops": {project.names("grade"): {"config": {"offline": offline, "runtime": runtime}}},
        }
        return defs.resolve_job_def(project.names(RESCORE)).execute_in_process(
            instance=instance,
            partition_key=run_id,
            run_config=run_config,
            tags=_tags(**{"soev/offline": str(offline).lower()}),
        )
