"""What the record reads of the instance's storage, and when it opens it:
`record.latest_prompts_versions` reads the latest materialization of each run partition of
`verdicts`, and none of the earlier ones; `record.open_ahead` opens the project's instance
before the run ends, for the record to take."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from soev_pipeline.orchestration import record
from soev_pipeline.orchestration.record import latest_prompts_versions
from soev_pipeline.project import ProjectPaths

KEY = dg.AssetKey(["demo", "verdicts"])


def _materialize(instance: dg.DagsterInstance, run: str, version: str | None) -> None:
    metadata = {} if version is None else {"prompts_version": version}
    instance.report_runless_asset_event(
        dg.AssetMaterialization(KEY, partition=run, metadata=metadata)
    )


def test_only_the_latest_materialization_of_each_run_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with dg.instance_for_test() as instance:
        for rescore in range(10):  # each run graded 10 times, the prompts changing
            for run in ("r0", "r1", "r2"):
                _materialize(instance, run, f"v{rescore}")
        _materialize(instance, "r1", None)  # graded last by a version that kept no prompts
        _materialize(instance, "r2", "v-new")
        instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey("other")))
        read: list[int] = []
        fetch = instance.fetch_materializations

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = fetch(*args, **kwargs)
            read.append(len(result.records))
            return result

        monkeypatch.setattr(instance, "fetch_materializations", counted)
        versions = latest_prompts_versions(instance, KEY)
    assert versions == {"r0": "v9", "r1": None, "r2": "v-new"}
    assert sum(read) == 3  # of 33 materializations


def test_runs_beyond_one_page_are_all_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("soev_pipeline.orchestration.record.PAGE", 2)
    with dg.instance_for_test() as instance:
        for run in range(5):
            _materialize(instance, f"r{run}", "old")
            _materialize(instance, f"r{run}", f"v{run}")
        versions = latest_prompts_versions(instance, KEY)
    assert versions == {f"r{run}": f"v{run}" for run in range(5)}


def test_the_instance_opened_ahead_is_the_one_the_record_writes_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    paths = ProjectPaths.of(tmp_path / "project.yaml")
    record.open_ahead(paths)
    with record._instance(paths) as ahead:
        assert isinstance(ahead, dg.DagsterInstance)
        ahead.report_runless_asset_event(dg.AssetMaterialization(KEY, partition="r1"))
    with record._instance(paths) as opened:  # taken once: this one is opened anew
        assert opened is not ahead
        assert opened.fetch_materializations(KEY, limit=5).records[0].storage_id > 0
    record.open_ahead(paths)
    assert list(record._AHEAD) == [paths.dagster_home]
    record.close_ahead()  # a run that failed: nothing left open for a later record
    assert record._AHEAD == {}


def test_the_record_keeps_each_database_open_so_its_log_is_checkpointed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    paths = ProjectPaths.of(tmp_path / "project.yaml")
    with record._instance(paths) as instance:  # makes the databases
        instance.report_runless_asset_event(dg.AssetMaterialization(KEY, partition="r0"))
    with record._instance(paths) as instance:
        files = record.written_databases(instance)
        assert [file.name for file in files] == ["runs.db", ".db", "index.db"]
        instance.report_runless_asset_event(dg.AssetMaterialization(KEY, partition="r1"))
        # Dagster's connection closed after the write; the held one keeps the log
        assert all(file.with_name(file.name + "-wal").exists() for file in files[1:])
    assert not any(file.with_name(file.name + "-wal").exists() for file in files)
    with dg.DagsterInstance.get() as reopened:  # every write is in the databases
        partitions = {
            item.asset_materialization.partition
            for item in reopened.fetch_materializations(KEY, limit=5).records
            if item.asset_materialization is not None
        }
    assert partitions == {"r0", "r1"}


def test_the_suites_versions_are_computed_ahead_of_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from soev_pipeline.core.models import Case
    from soev_pipeline.orchestration import metadata
    from soev_pipeline.project import load
    from tests.support.project import write_project

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    url = "http://127.0.0.1:9/"
    loaded = load(write_project(tmp_path / "p", url, url + "v1/"))
    paths = ProjectPaths.of(loaded.path)
    record.open_ahead(paths, loaded)
    record.close_ahead()

    def unexpected(case: Case) -> str:
        raise AssertionError(f"{case.id}: digested again, after the run")

    monkeypatch.setattr(Case, "digest", unexpected)
    assert all(len(metadata.suite_version(suite)) == 16 for suite in loaded.suites)
