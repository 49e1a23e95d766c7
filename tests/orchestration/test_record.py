"""A run of the CLI shows in Dagster as a run of the UI does: the same assets, partitions,
metadata, code versions and checks (reported by `orchestration.record`)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from soev_pipeline.orchestration import definitions_for
from tests.orchestration.test_definitions import add_rubric
from tests.support.cli import invoke
from tests.support.thread_api import FakeThreadAPI

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]
COMPARED = {"previous_run", "delta/overall", "p_value/overall", "regressions", "improvements"}


def _latest(instance: dg.DagsterInstance, name: str) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(dg.AssetKey(name), limit=1).records
    assert records, f"no materialization of {name}"
    materialization = records[0].asset_materialization
    assert materialization is not None
    return materialization


def _checks(instance: dg.DagsterInstance, asset: str, check: str) -> list[bool]:
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    return [record.event.dagster_event.event_specific_data.passed for record in records]  # type: ignore[union-attr]


def test_a_cli_run_is_recorded_like_a_ui_run(
    project_path: Path, system: FakeThreadAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    rubric = add_rubric(project_path)
    assert invoke("run", "--project", project_path, "--run-id", "c1").status == 0
    defs = definitions_for(project_path)
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("runs") == ["c1"]
        assert instance.get_runs() == []  # reported, not executed by Dagster
        shown = {name: _latest(instance, name) for name in ("evidence", "verdicts", "report")}
        assert {m.partition for m in shown.values()} == {"c1"}
        assert shown["evidence"].metadata["attempts"].value == 6
        assert 0 <= shown["report"].metadata["pass_rate/overall"].value <= 1
        assert shown["verdicts"].tags["soev/launched_by"] == "cli"
        assert _checks(instance, "report", "no_significant_regression") == [True]
        assert _checks(instance, "verdicts", "graded_with_current_prompts") == [True]
        suites = instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        assert sorted(record.partition_key or "" for record in suites) == ["kern", "privacy"]

        # the same metadata as an evaluation launched from the UI
        instance.add_dynamic_partitions("runs", ["u1"])
        ui = defs.resolve_job_def("evaluate").execute_in_process(
            instance=instance, partition_key="u1"
        )
        for node, name in (("attempt", "evidence"), ("grade", "verdicts"), ("aggregate", "report")):
            (materialization,) = ui.asset_materializations_for_node(node)
            # u1 has c1 before it, c1 none; the asset job writes the HTML report, the CLI not
            extra = COMPARED | {"html_report"} if name == "report" else set()
            assert set(materialization.metadata) == set(shown[name].metadata) | extra, name
        fresh = get_stale_status_resolver(instance, list(defs.assets or []))
        assert fresh.get_status(dg.AssetKey("verdicts"), "c1") == fresh.get_status(
            dg.AssetKey("verdicts"), "u1"
        )

    # a prompt edit makes the CLI's verdicts stale as it does the UI's, once the new prompts
    # are recorded (the prompts watch runs check_prompts)
    rubric.write_text("Is het antwoord helder en volledig?\n", encoding="utf-8")
    changed = definitions_for(project_path)
    with dg.DagsterInstance.get() as instance:
        assert changed.resolve_job_def("check_prompts").execute_in_process(instance=instance)
        resolver = get_stale_status_resolver(instance, list(changed.assets or []))
        assert resolver.get_status(dg.AssetKey("verdicts"), "c1") == StaleStatus.STALE
        assert resolver.get_status(dg.AssetKey("verdicts"), "u1") == StaleStatus.STALE
        # the rescore records new verdicts with the new code version, and the suites again
        # only when they changed
        suites_before = len(
            instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        )
        assert invoke("rescore", "c1", "--project", project_path, "--offline").status == 0
        verdicts = _latest(instance, "verdicts")
        assert verdicts.partition == "c1"
        version = changed.resolve_assets_def("verdicts").code_versions_by_key[
            dg.AssetKey("verdicts")
        ]
        assert verdicts.tags["soev/prompts_version"] == version
        resolver = get_stale_status_resolver(instance, list(changed.assets or []))
        assert resolver.get_status(dg.AssetKey("verdicts"), "c1") == StaleStatus.FRESH
        suites = instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        assert len(suites) == suites_before
        assert _checks(instance, "verdicts", "graded_with_current_prompts")[0] is False  # u1
        assert resolver.get_status(dg.AssetKey("report"), "c1") == StaleStatus.FRESH
