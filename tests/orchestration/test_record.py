"""A run of the CLI shows in Dagster as a run of the UI does: the same assets, partitions,
metadata, code versions, provenance, staleness and checks (`orchestration.record`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from soev_pipeline.analysis import verdicts_frame
from soev_pipeline.orchestration import definitions_for
from tests.orchestration.test_definitions import add_rubric
from tests.support.cli import invoke
from tests.support.thread_api import FakeThreadAPI

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]
COMPARED = {
    "vs_previous/run",
    "vs_previous/delta",
    "vs_previous/p_value",
    "vs_previous/regressions",
    "vs_previous/improvements",
}
PROVENANCE = "dagster/"


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


def _status(defs: dg.Definitions, instance: dg.DagsterInstance, name: str, run: str) -> Any:
    resolver = get_stale_status_resolver(instance, list(defs.assets or []))
    return resolver.get_status(dg.AssetKey(name), run)


def _provenance(materialization: dg.AssetMaterialization) -> dict[str, str]:
    return {k: v for k, v in materialization.tags.items() if k.startswith(PROVENANCE)}


def test_a_cli_run_is_recorded_like_a_ui_run(
    project_path: Path, system: FakeThreadAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    rubric = add_rubric(project_path)
    assert invoke("run", "--project", project_path, "--run-id", "c1").status == 0
    shown = definitions_for(project_path)  # what the UI holds, never reloaded below
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("runs") == ["c1"]
        assert instance.get_runs() == []  # reported, not executed by Dagster
        cli = {name: _latest(instance, name) for name in ("evidence", "verdicts", "report")}
        assert {m.partition for m in cli.values()} == {"c1"}
        assert cli["evidence"].metadata["attempts"].value == 6
        assert 0 <= cli["report"].metadata["pass_rate"].value <= 1
        assert cli["verdicts"].tags["soev/launched_by"] == "cli"
        assert Path(str(cli["report"].metadata["html_report"].value)).exists()
        table = cli["report"].metadata
        assert table["dagster/row_count"].value == len(verdicts_frame(project_path, runs=["c1"]))
        schema = table["dagster/column_schema"].value
        assert [column.name for column in schema.columns] == list(verdicts_frame(project_path))  # type: ignore[union-attr]
        assert _checks(instance, "report", "no_significant_regression") == [True]
        assert _checks(instance, "verdicts", "graded_with_current_prompts") == [True]
        suites = instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        assert sorted(record.partition_key or "" for record in suites) == ["kern", "privacy"]

        # the same metadata, code versions and provenance as an evaluation of the UI
        instance.add_dynamic_partitions("runs", ["u1"])
        ui = shown.resolve_job_def("evaluate").execute_in_process(
            instance=instance, partition_key="u1"
        )
        made = {
            m.asset_key.to_user_string(): m
            for m in ui.asset_materializations_for_node("attempt_grade_aggregate")
        }
        for name, materialization in made.items():
            extra = COMPARED if name == "report" else set()  # u1 has c1 before it, c1 none
            assert set(materialization.metadata) == set(cli[name].metadata) | extra, name
            assert set(_provenance(materialization)) == set(_provenance(cli[name])), name
            code = "dagster/code_version"
            assert materialization.tags[code] == cli[name].tags[code], name
        prompts = "dagster/input_data_version/judge_prompts"
        assert made["verdicts"].tags[prompts] == cli["verdicts"].tags[prompts]
        for name in ("evidence", "verdicts", "report"):
            assert _status(shown, instance, name, "c1") == StaleStatus.FRESH, name
            assert _status(shown, instance, name, "u1") == StaleStatus.FRESH, name

    # a prompt edit makes the CLI's verdicts and report stale as it does the UI's, once the
    # new prompts are recorded (the prompts watch runs check_prompts in a new process)
    rubric.write_text("Is het antwoord helder en volledig?\n", encoding="utf-8")
    watched = definitions_for(project_path)
    with dg.DagsterInstance.get() as instance:
        assert watched.resolve_job_def("check_prompts").execute_in_process(instance=instance)
        for run in ("c1", "u1"):
            assert _status(shown, instance, "verdicts", run) == StaleStatus.STALE, run
            assert _status(shown, instance, "report", run) == StaleStatus.STALE, run
        # the rescore records new verdicts and report, and the suites again only when they
        # changed
        suites_before = len(
            instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        )
        assert invoke("rescore", "c1", "--project", project_path, "--offline").status == 0
        verdicts = _latest(instance, "verdicts")
        assert verdicts.partition == "c1"
        assert _status(shown, instance, "verdicts", "c1") == StaleStatus.FRESH
        assert _status(shown, instance, "report", "c1") == StaleStatus.FRESH
        assert _status(shown, instance, "verdicts", "u1") == StaleStatus.STALE
        suites = instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        assert len(suites) == suites_before
        assert _checks(instance, "verdicts", "graded_with_current_prompts")[0] is False  # u1


@pytest.mark.parametrize("part", ["record_graded", "record_report"])
def test_a_record_that_fails_in_either_part_is_a_warning_after_a_finished_run(
    part: str,
    project_path: Path,
    system: FakeThreadAPI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first part is recorded on a thread while the run is aggregated: its failure
    too reaches the user as the one warning, and the run is archived whole."""
    from soev_pipeline.orchestration import record

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("database is locked")

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(record, part, broken)
    result = invoke("run", "--project", project_path, "--run-id", "w1", "--suite", "kern")
    assert result.status == 0, result.err
    assert "recording it in Dagster failed (RuntimeError: database is locked)" in result.err
    assert "`soev-evals rescore w1` records it again" in result.err
    assert (project_path.parent / "runs" / "w1").is_dir()
