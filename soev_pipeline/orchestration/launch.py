"""Launch the jobs from the CLI in the same Dagster instance as the UI.

The instance is `$DAGSTER_HOME` when set, else `.soev/dagster` beside the runs; the runs
go in its run history, so a run started here shows in `dagster dev` and the other way round.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.cli.loading import load_cached
from soev_pipeline.cli.runtimes import state_dir

from .assets import runs_partitions
from .definitions import build_definitions
from .jobs import EVALUATE, LOAD_SUITES, RESCORE
from .resources import Progress

QUIET: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def dagster_home(runs_dir: Path) -> Path:
    """`$DAGSTER_HOME`, else the `dagster` folder of the state beside the runs."""
    configured = os.environ.get("DAGSTER_HOME")
    return Path(configured) if configured else state_dir(runs_dir) / "dagster"


@contextmanager
def project_instance(runs_dir: Path) -> Iterator[dg.DagsterInstance]:
    """The Dagster instance the CLI and the UI share for the runs in `runs_dir`."""
    home = dagster_home(runs_dir).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
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


def _changed_suites(
    instance: dg.DagsterInstance, project_path: Path, names: Sequence[str]
) -> list[str]:
    """The suites whose digest differs from their latest `suites` materialization."""
    loaded = load_cached(project_path)
    changed = []
    for name in names:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("suites"), asset_partitions=[name]),
            limit=1,
        )
        latest = result.records[0].asset_materialization if result.records else None
        recorded = latest.metadata.get("digest") if latest is not None else None
        digest = getattr(recorded, "value", recorded)
        if digest != loaded.suite(name).digest():
            changed.append(name)
    return changed


def _ensure_partition(instance: dg.DagsterInstance, run_id: str) -> None:
    name = runs_partitions.name or "runs"
    if not instance.has_dynamic_partition(name, run_id):
        instance.add_dynamic_partitions(name, [run_id])


def evaluate(
    project_path: Path,
    runs_dir: Path,
    run_id: str,
    *,
    suites: Sequence[str],
    split: str | None,
    k: int,
    runtime: str | None,
    resume: bool,
    progress: Progress | None = None,
) -> dg.ExecuteInProcessResult:
    """Load the selected suites, then run `evaluate` on the run's partition.

    Raises the step's own exception when a step fails (a `ProjectError`, say).
    """
    defs = build_definitions(project_path, runs_dir=runs_dir, progress=progress)
    names = list(suites)
    if not names:
        partitions = defs.resolve_assets_def("suites").partitions_def
        names = list(partitions.get_partition_keys()) if partitions is not None else []
    with project_instance(runs_dir) as instance:
        load_suites = defs.resolve_job_def(LOAD_SUITES)
        for name in _changed_suites(instance, project_path, names):
            load_suites.execute_in_process(instance=instance, partition_key=name, run_config=QUIET)
        _ensure_partition(instance, run_id)
        config = {
            "suites": list(suites),
            "split": split,
            "k": k,
            "runtime": runtime,
            "resume": resume,
        }
        run_config = {
            **QUIET,
            "ops": {
                "attempt": {"config": config},
                "grade": {"config": {"offline": False, "runtime": runtime}},
                "aggregate": {"config": {"runtime": runtime}},
            },
        }
        return defs.resolve_job_def(EVALUATE).execute_in_process(
            instance=instance,
            partition_key=run_id,
            run_config=run_config,
            tags={"soev/launched_by": "cli"},
        )


def rescore(
    project_path: Path,
    runs_dir: Path,
    run_id: str,
    *,
    offline: bool,
    runtime: str | None,
    progress: Progress | None = None,
) -> dg.ExecuteInProcessResult:
    """Re-materialize `verdicts` and `report` of a run from its archived evidence."""
    defs = build_definitions(project_path, runs_dir=runs_dir, progress=progress)
    with project_instance(runs_dir) as instance:
        _ensure_partition(instance, run_id)
        run_config = {
            **QUIET,
            "ops": {"grade": {"config": {"offline": offline, "runtime": runtime}}},
        }
        return defs.resolve_job_def(RESCORE).execute_in_process(
            instance=instance,
            partition_key=run_id,
            run_config=run_config,
            tags={"soev/launched_by": "cli", "soev/offline": str(offline).lower()},
        )
