"""Runs whose soev-evals process is gone are marked failed, also with a half-made event log."""

import os
import socket
import sqlite3
from pathlib import Path

import dagster as dg

from soev_pipeline.orchestration.launch import (
    HOST,
    LAUNCHED_BY,
    PID,
    STORAGE_READY,
    ensure_instance,
    fail_orphaned_runs,
)

GONE = "999999999"  # no process has this id


def _started_run(instance: dg.DagsterInstance, pid: str) -> dg.DagsterRun:
    run = instance.create_run_for_job(
        dg.GraphDefinition(name="g", node_defs=[]).to_job(name="j"),
        tags={LAUNCHED_BY: "cli", PID: pid, HOST: socket.gethostname()},
    )
    instance.handle_run_event(
        run.run_id,
        dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_START.value, job_name="j", message="started"
        ),
    )
    return instance.get_run_by_id(run.run_id)  # type: ignore[return-value]


def test_the_storage_is_made_once_and_marked(tmp_path: Path) -> None:
    home = ensure_instance(tmp_path / "dagster")
    assert (home / STORAGE_READY).exists() and (home / "dagster.yaml").exists()
    assert ensure_instance(home) == home


def test_a_run_whose_event_log_was_left_half_made_is_still_marked_failed(tmp_path: Path) -> None:
    home = ensure_instance(tmp_path / "dagster")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = _started_run(instance, GONE)
        alive = _started_run(instance, str(os.getpid()))
        assert run.status == dg.DagsterRunStatus.STARTED
        shard = Path(instance.event_log_storage.path_for_shard(run.run_id))  # type: ignore[attr-defined]
    # a process killed while it stamped the schema: two versions, and every write fails
    with sqlite3.connect(shard) as db:
        db.execute("CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32))")
        db.execute("INSERT INTO alembic_version VALUES ('a'), ('b')")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert fail_orphaned_runs(instance) == 1
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE  # type: ignore[union-attr]
        assert instance.get_run_by_id(alive.run_id).status == dg.DagsterRunStatus.STARTED  # type: ignore[union-attr]
    assert shard.with_name(shard.name + ".damaged").exists()  # put aside, not deleted
