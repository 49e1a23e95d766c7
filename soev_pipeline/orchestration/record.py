"""What a run records in Dagster, whichever front end ran it.

`recorded` turns what `soev_pipeline.api.execute` returned into one record per asset it
made (`evidence`, `verdicts`, `report`: metadata and data version). The asset job yields
them as the materializations of its op, and Dagster adds the code version and the
provenance (the data versions of the inputs) itself. A run that no asset job made is
recorded by `record_evaluation` from the same records: `soev-evals run` and `rescore`
report them to the instance (`record`), the `new_evaluation` job logs them in its own run.
Those carry the same code version and provenance as tags, the ones Dagster writes on the
materializations its runs make and reads to tell whether a partition is stale: so a CLI
run goes stale when a prompt changes, and fresh when it is rescored, as a UI run does.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

from soev_pipeline.api import Evaluation
from soev_pipeline.core.canonical import digest
from soev_pipeline.project import LoadedProject, ProjectPaths
from soev_pipeline.project.listing import view_url

from . import metadata
from .instance import project_instance
from .keys import add_run, asset_key, prefix_of, runs_partitions
from .versions import DEPENDENCIES, FIXED, code_version

LAUNCHED_BY = "soev/launched_by"
"""Who ran a run that no asset job made: `cli`, `ui` (new_evaluation) or a schedule."""
CODE_VERSION_TAG = "dagster/code_version"
DATA_VERSION_TAG = "dagster/data_version"
USER_PROVIDED_TAG = "dagster/data_version_is_user_provided"
INPUT_VERSION_TAG = "dagster/input_data_version/"
INPUT_POINTER_TAG = "dagster/input_event_pointer/"
UNKNOWN_INPUT = "INITIAL"
"""Dagster's data version of an input that was never recorded."""
NO_POINTER = "NULL"
RUNLESS = ""
"""The run id under which Dagster stores the events that no run made (`record`'s)."""
RUN_ASSETS = frozenset({"evidence", "verdicts", "report"})
"""The assets partitioned by run: an input of one of them is its own run's partition."""

Event = dg.AssetMaterialization | dg.AssetCheckEvaluation


@dataclass(frozen=True)
class Recorded:
    """One asset that a run made: its plain name, partition, metadata and data version."""

    name: str
    partition: str | None
    metadata: Mapping[str, Any]
    data_version: str


def recorded(
    evaluation: Evaluation, prefix: str | None, names: Collection[str] = RUN_ASSETS
) -> list[Recorded]:
    """The assets of `names` that `evaluation` of the project named `prefix` made, in the
    order of their steps."""
    archive, run_id = evaluation.archive, evaluation.archive.run_id
    items: list[Recorded] = []
    if evaluation.attempted is not None and "evidence" in names:
        evidence = archive.evidence_file()
        size = evidence.stat().st_size if evidence.exists() else 0
        items.append(
            Recorded(
                "evidence",
                run_id,
                metadata.evidence(evaluation.attempted),
                digest([run_id, size])[:16],  # the evidence is appended to, never rewritten
            )
        )
    scoring = evaluation.scoring
    if scoring is not None and "grade" in evaluation.steps and "verdicts" in names:
        items.append(
            Recorded(
                "verdicts",
                run_id,
                metadata.verdicts(scoring, evaluation.loaded.prompts_version),
                f"{run_id}/{scoring.path.name}",
            )
        )
    if scoring is not None and evaluation.report is not None and "report" in names:
        items.append(
            Recorded(
                "report",
                run_id,
                metadata.report(
                    evaluation.report, archive, evaluation.html_report, view_url(prefix)
                ),
                f"{run_id}/{scoring.path.name}",
            )
        )
    return items


def data_version_tags(version: str) -> dict[str, str]:
    """The tags of a data version given by us, not computed by Dagster."""
    return {DATA_VERSION_TAG: version, USER_PROVIDED_TAG: "true"}


def latest(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None
) -> dg.EventLogRecord | None:
    """The latest materialization of the asset `key` (of one partition, or of any partition
    when `partition` is None)."""
    records = dg.AssetRecordsFilter(
        asset_key=key, asset_partitions=None if partition is None else [partition]
    )
    found = instance.fetch_materializations(records, limit=1).records
    return found[0] if found else None


def recorded_version(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None
) -> str | None:
    """The data version of the latest record of the asset `key`, if it has one."""
    record = latest(instance, key, partition)
    return None if record is None else (record.event_log_entry.tags or {}).get(DATA_VERSION_TAG)


def provenance(
    instance: dg.DagsterInstance,
    loaded: LoadedProject,
    name: str,
    partition: str | None,
    prefix: str | None,
) -> dict[str, str]:
    """The code version of the asset `name` and the data versions of its inputs as they are
    recorded now: the tags Dagster writes on a materialization of it that its run makes."""
    tags = {CODE_VERSION_TAG: code_version(loaded, name)}
    for dependency in DEPENDENCIES[name]:
        key = asset_key(dependency, prefix)
        record = latest(instance, key, partition if dependency in RUN_ASSETS else None)
        version = (
            None if record is None else (record.event_log_entry.tags or {}).get(DATA_VERSION_TAG)
        )
        pointer = NO_POINTER if record is None else str(record.storage_id)
        tags[INPUT_VERSION_TAG + key.to_user_string()] = version or UNKNOWN_INPUT
        tags[INPUT_POINTER_TAG + key.to_user_string()] = pointer
    return tags


def record_inputs(
    loaded: LoadedProject,
    suites: tuple[str, ...],
    instance: dg.DagsterInstance,
    emit: Callable[[Event], object],
    *,
    prefix: str | None,
    launched_by: str,
) -> None:
    """Record the inputs of a run as they are now, where they differ from the recorded ones:
    each suite it ran (its partition of `suites`) and the judge prompts (`judge_prompts`)."""
    tags = {LAUNCHED_BY: launched_by}
    key = asset_key("suites", prefix)
    for name in suites:
        suite = loaded.suite(name)
        version = metadata.suite_version(suite)
        if recorded_version(instance, key, name) != version:
            emit(
                dg.AssetMaterialization(
                    key,
                    partition=name,
                    metadata=metadata.suite(loaded, suite),
                    tags={**tags, CODE_VERSION_TAG: FIXED, **data_version_tags(version)},
                )
            )
    key = asset_key("judge_prompts", prefix)
    if recorded_version(instance, key) != loaded.prompts_version:
        emit(
            dg.AssetMaterialization(
                key,
                metadata=metadata.prompts(loaded),
                tags={
                    **tags,
                    CODE_VERSION_TAG: FIXED,
                    **data_version_tags(loaded.prompts_version),
                },
            )
        )


def record_evaluation(
    evaluation: Evaluation,
    instance: dg.DagsterInstance,
    emit: Callable[[Event], object],
    *,
    prefix: str | None,
    launched_by: str,
    in_run: bool,
) -> None:
    """Record a run that no asset job made: its inputs, then each asset it made (each with
    its provenance as recorded once the assets before it are), with their checks: what the
    attempt and grade steps made (`record_graded`), then the report (`record_report`).

    `in_run` says that a Dagster run logs the events (the check of `report` is then the
    partition's); reported from outside a run, the check is the asset's, naming the run in
    its metadata: Dagster 1.13 stores one reported evaluation per partition, and a second
    one (after a rescore) breaks a unique key of its storage.
    """
    record_graded(evaluation, instance, emit, prefix=prefix, launched_by=launched_by)
    record_report(evaluation, instance, emit, prefix=prefix, launched_by=launched_by, in_run=in_run)


def _materialize(
    evaluation: Evaluation,
    item: Recorded,
    instance: dg.DagsterInstance,
    emit: Callable[[Event], object],
    *,
    prefix: str | None,
    launched_by: str,
) -> None:
    tags = {
        LAUNCHED_BY: launched_by,
        **provenance(instance, evaluation.loaded, item.name, item.partition, prefix),
        **data_version_tags(item.data_version),
    }
    emit(
        dg.AssetMaterialization(
            asset_key(item.name, prefix),
            partition=item.partition,
            metadata=dict(item.metadata),
            tags=tags,
        )
    )


def record_graded(
    evaluation: Evaluation,
    instance: dg.DagsterInstance,
    emit: Callable[[Event], object],
    *,
    prefix: str | None,
    launched_by: str,
) -> None:
    """The first part of `record_evaluation`: the run's inputs, its partition, the assets
    of its attempt and grade steps (`evidence`, `verdicts`) and the check of `verdicts`.
    It needs no report: `soev-evals run` records it while the run is aggregated."""
    loaded, run_id = evaluation.loaded, evaluation.archive.run_id
    suites = evaluation.archive.manifest().suites
    record_inputs(loaded, suites, instance, emit, prefix=prefix, launched_by=launched_by)
    add_run(instance, run_id, prefix)
    for item in recorded(evaluation, prefix, ("evidence", "verdicts")):
        _materialize(evaluation, item, instance, emit, prefix=prefix, launched_by=launched_by)
    if "grade" in evaluation.steps:
        current = metadata.prompts_check(
            loaded.prompts_version, latest_prompts_versions(instance, asset_key("verdicts", prefix))
        )
        emit(current.evaluation(asset_key("verdicts", prefix), None))


def record_report(
    evaluation: Evaluation,
    instance: dg.DagsterInstance,
    emit: Callable[[Event], object],
    *,
    prefix: str | None,
    launched_by: str,
    in_run: bool,
) -> None:
    """The second part of `record_evaluation`: the `report` asset and its check, when the
    evaluation has a report (see `record_evaluation` for `in_run`)."""
    if evaluation.report is None:
        return
    run_id = evaluation.archive.run_id
    for item in recorded(evaluation, prefix, ("report",)):
        _materialize(evaluation, item, instance, emit, prefix=prefix, launched_by=launched_by)
    regression = metadata.regression(evaluation.report, run_id=None if in_run else run_id)
    emit(regression.evaluation(asset_key("report", prefix), run_id if in_run else None))


PAGE = 500
"""Records read from the instance's storage per call."""


def latest_prompts_versions(
    instance: dg.DagsterInstance, key: dg.AssetKey
) -> dict[str, str | None]:
    """The prompts version that the latest materialization of each partition of `verdicts`
    (the asset `key`) was graded with, by run partition.

    Reads the latest materialization of each partition alone (one query finds their
    storage ids), never the earlier ones: a run rescored a hundred times costs one record,
    so the cost follows the number of runs, not the history of rescores.
    """
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(
        key, dg.DagsterEventType.ASSET_MATERIALIZATION
    )
    ids = sorted(latest.values())
    latest_by_run: dict[str, str | None] = {}
    for start in range(0, len(ids), PAGE):
        page = ids[start : start + PAGE]
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, storage_ids=page), limit=len(page)
        ).records
        for item in records:
            materialization = item.asset_materialization
            if materialization is None or materialization.partition is None:
                continue
            value = materialization.metadata.get("prompts_version")
            text = value.value if isinstance(value, dg.TextMetadataValue) else value
            latest_by_run[materialization.partition] = text if isinstance(text, str) else None
    return latest_by_run


def record(evaluation: Evaluation) -> None:
    """Report a finished run or rescore of the CLI to the project's Dagster instance (the
    one `open_ahead` opened for it, when it did)."""
    prefix = prefix_of(evaluation.paths.project_file)
    with _instance(evaluation.paths) as instance:
        record_evaluation(
            evaluation,
            instance,
            instance.report_runless_asset_event,
            prefix=prefix,
            launched_by="cli",
            in_run=False,
        )


def record_rest(evaluation: Evaluation) -> None:
    """The second part of `record` alone (`record_report`): for a run whose first part a
    process of its own recorded before it ended (`cli.recording`)."""
    with _instance(evaluation.paths) as instance:
        _record_report_of_cli(evaluation, instance, prefix_of(evaluation.paths.project_file))


def _record_report_of_cli(
    evaluation: Evaluation, instance: dg.DagsterInstance, prefix: str | None
) -> None:
    """`record_report` of a CLI run, reported to `instance` from outside a Dagster run."""
    record_report(
        evaluation,
        instance,
        instance.report_runless_asset_event,
        prefix=prefix,
        launched_by="cli",
        in_run=False,
    )


class Recording:
    """The record of one run in two parts, the first while the run is aggregated: what the
    attempt and grade steps made (`graded`), then the report (`finish`). Each write is a
    commit of its own, as in `record`; the record is whole when `finish` returns. Both
    parts write to the instance opened ahead (`open_ahead`), if it was, held open
    (`held_open`) from `graded` until `finish`. `soev-evals run` calls `graded` on a thread
    of its own, once the grade step is done (`api.execute`'s `graded`).
    """

    def __init__(self, paths: ProjectPaths) -> None:
        self._paths = paths
        self._prefix = prefix_of(paths.project_file)
        self._opened = ExitStack()
        self._instance: dg.DagsterInstance | None = None

    def graded(self, evaluation: Evaluation) -> None:
        """Record what the attempt and grade steps of `evaluation` made (`record_graded`)."""
        instance = self._opened.enter_context(_instance(self._paths))
        self._instance = instance
        record_graded(
            evaluation,
            instance,
            instance.report_runless_asset_event,
            prefix=self._prefix,
            launched_by="cli",
        )

    def finish(self, evaluation: Evaluation | None) -> None:
        """Record the rest of `evaluation` (all of it without `graded` before; nothing when
        None: the run stopped), and close the instance."""
        try:
            if evaluation is None:
                return
            if self._instance is None:
                record(evaluation)
                return
            _record_report_of_cli(evaluation, self._instance, self._prefix)
        finally:
            self._opened.close()


_AHEAD: dict[Path, dg.DagsterInstance] = {}
_AHEAD_LOCK = threading.Lock()


def open_ahead(paths: ProjectPaths, loaded: LoadedProject | None = None) -> None:
    """Open the project's instance and connect its storage ahead of `record`, and compute
    the data version of each suite of `loaded` that the record compares with the recorded
    one (`Suite.digest`, computed once: 20 ms for 2,000 cases).

    Opening a SQLite instance imports its storage modules and checks the schema version of
    each database it touches (the runs, the event index, the shard of events no run made):
    about 0.2 s. `soev-evals run` calls this on its start-up thread while the attempts run,
    so that the record after the last attempt only writes. The instance stays open until
    `record` takes it, or `close_ahead`.
    """
    for suite in loaded.suites if loaded is not None else ():
        metadata.suite_version(suite)
    prefix, home = prefix_of(paths.project_file), paths.dagster_home
    with project_instance(paths, close=False) as instance:
        instance.has_dynamic_partition(runs_partitions(prefix), "soev")  # the run storage
        instance.fetch_materializations(asset_key("verdicts", prefix), limit=1)  # the index
        instance.event_log_storage.get_records_for_run(RUNLESS, limit=1)  # its shard
    with _AHEAD_LOCK:
        _AHEAD[home], earlier = instance, _AHEAD.get(home)
    if earlier is not None:
        earlier.dispose()


def close_ahead() -> None:
    """Close the instances `open_ahead` opened that no `record` took (a run that failed)."""
    with _AHEAD_LOCK:
        opened = list(_AHEAD.values())
        _AHEAD.clear()
    for instance in opened:
        instance.dispose()


def written_databases(instance: dg.DagsterInstance) -> list[Path]:
    """The SQLite files a record writes to, when the instance keeps its storage in SQLite:
    the run storage (the run partitions), the event log's shard of the events no run made,
    and its index. Empty for another storage (Postgres)."""
    files: list[Path] = []
    runs = instance.run_storage
    if isinstance(runs, SqliteRunStorage) and runs._conn_string.startswith(_SQLITE_URL):
        files.append(Path(runs._conn_string.removeprefix(_SQLITE_URL)))
    events = instance.event_log_storage
    if isinstance(events, SqliteEventLogStorage):
        files += [Path(events.path_for_shard(shard)) for shard in (RUNLESS, INDEX_SHARD_NAME)]
    return [file for file in files if file.exists()]


_SQLITE_URL = "sqlite:///"


@contextmanager
def held_open(instance: dg.DagsterInstance) -> Iterator[None]:
    """Keep a connection open to each SQLite database the record writes, while it writes.

    Dagster's SQLite storage connects anew for each read and write, and its databases are
    in write-ahead-log mode: the last connection to close checkpoints the log into the
    database and deletes it, a few milliseconds of synced writes, about thirty times a
    record. With one connection held open, each of Dagster's is never the last: the log is
    checkpointed once, when the held one closes. Every commit is as durable as before.
    """
    with ExitStack() as stack:
        for file in written_databases(instance):
            held = stack.enter_context(closing(sqlite3.connect(file, check_same_thread=False)))
            held.execute("PRAGMA schema_version").fetchone()  # it joins the log only once read
        yield


@contextmanager
def _instance(paths: ProjectPaths) -> Iterator[dg.DagsterInstance]:
    with _AHEAD_LOCK:
        ahead = _AHEAD.pop(paths.dagster_home, None)
    if ahead is None:
        with project_instance(paths) as instance, held_open(instance):
            yield instance
        return
    try:
        with held_open(ahead):
            yield ahead
    finally:
        ahead.dispose()
