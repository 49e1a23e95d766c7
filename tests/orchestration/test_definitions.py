"""The Dagster layer: definitions load, evaluate and rescore materialize, staleness, schedule.

The tests that execute a job are black-box (`e2e`): each runs the assets against the fake
system under test."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from soev_pipeline.orchestration import definitions_for as build_definitions
from soev_pipeline.orchestration.resources import ArchiveOnly
from soev_pipeline.run import RunArchive, read_report
from tests.conftest import SECRET
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.usefixtures("no_instance_left_current")

REPO = Path(__file__).resolve().parents[2]


def add_rubric(project_path: Path) -> Path:
    """Give every kern case a rubric.judge criterion over a rubric file."""
    rubric = project_path.parent / "rubrics" / "helder.md"
    rubric.parent.mkdir()
    rubric.write_text("Is het antwoord helder?\n- goed\n- slecht\n", encoding="utf-8")
    kern = project_path.parent / "suites" / "kern" / "kern.yaml"
    data = yaml.safe_load(kern.read_text(encoding="utf-8"))
    data["criteria"].append(
        {
            "kind": "rubric.judge",
            "rubric": "rubrics/helder.md",
            "labels": ["goed", "slecht"],
            "pass_labels": ["goed"],
        }
    )
    kern.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return rubric


def _evaluate(defs: dg.Definitions, instance: dg.DagsterInstance, run_id: str) -> Any:
    instance.add_dynamic_partitions("runs", [run_id])
    return defs.resolve_job_def("evaluate").execute_in_process(
        instance=instance, partition_key=run_id
    )


def _event_texts(instance: dg.DagsterInstance) -> str:
    texts = []
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id):
            texts.append(entry.message or "")
            event = entry.dagster_event
            if event is not None:
                texts.append(repr(event.event_specific_data))
    return "\n".join(texts)


def test_definitions_load(project_path: Path) -> None:
    defs = build_definitions(project_path)
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == {
        "suites",
        "judge_prompts",
        "evidence",
        "verdicts",
        "report",
        "labels",
        "judge_calibration",
    }
    for job in ("evaluate", "rescore", "load_suites"):
        assert defs.resolve_job_def(job) is not None
    ops = {node.name for node in defs.resolve_job_def("evaluate").nodes}
    assert {"attempt", "grade", "aggregate"} <= ops
    assert {node.name for node in defs.resolve_job_def("load_suites").nodes} == {"load"}
    assert defs.resolve_schedule_def("nightly").cron_schedule == "0 2 * * *"
    suites = defs.resolve_assets_def("suites")
    assert suites.partitions_def is not None
    assert suites.partitions_def.get_partition_keys() == ["kern", "privacy"]
    dg.Definitions.validate_loadable(defs)


def test_no_job_pickles_an_output(project_path: Path) -> None:
    """Every job binds the archive-only IO manager: nothing falls back to Dagster's pickling
    default, and a step that returned a value would fail rather than be stored."""
    defs = build_definitions(project_path)
    for name in ("evaluate", "rescore", "load_suites", "check_prompts", "new_evaluation"):
        job = defs.resolve_job_def(name)
        description = job.resource_defs["io_manager"].description or ""
        assert description.startswith("Stores nothing"), name

    @dg.op
    def returns_a_value() -> int:
        return 1

    @dg.job(resource_defs={"io_manager": ArchiveOnly()})
    def leaks() -> None:
        returns_a_value()

    result = leaks.execute_in_process(raise_on_error=False)
    assert not result.success
    assert "returned a value" in str(result.all_events)


def test_top_level_definitions_file(project_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOEV_PROJECT", str(project_path))
    spec = importlib.util.spec_from_file_location("soev_definitions", REPO / "definitions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert isinstance(module.defs, dg.Definitions)
    assert (REPO / "workspace.yaml").exists()


@pytest.mark.e2e
def test_evaluate_then_rescore(
    project_path: Path, system: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOEV_VIEW_URL", "http://127.0.0.1:8766/")
    defs = build_definitions(project_path)
    with dg.instance_for_test() as instance:
        result = _evaluate(defs, instance, "m1")
        assert result.success
        assert len(system.texts) == 7  # 6 cases, kern-002 of two turns
        archive = RunArchive(project_path.parent / "runs", "m1")
        assert len(list(archive.iter_evidence())) == 6
        report = archive.latest_report()
        assert report is not None and report["suites"]["kern"]["cases"] == 4
        evidence = result.asset_materializations_for_node("attempt")[0].metadata
        assert evidence["attempts"].value == 6
        assert evidence["failed_attempts"].value == 1
        verdicts = result.asset_materializations_for_node("grade")[0].metadata
        assert verdicts["verdicts_fail"].value == 1
        metadata = result.asset_materializations_for_node("aggregate")[0].metadata
        assert metadata["pass_rate/kern"].value == pytest.approx(0.5)
        assert metadata["pass_rate/split/test"].value == pytest.approx(0.5)
        assert metadata["verdicts/fail"].value == 1
        assert str(archive.path) in str(metadata["archive"].value)
        html = Path(str(metadata["html_report"].value))
        assert html == archive.scorings()[-1] / "report.html"
        failing = [case.case_id for case in read_report(archive).cases if case.pass_rate < 1]
        assert failing and all(case_id in html.read_text(encoding="utf-8") for case_id in failing)
        assert SECRET not in html.read_text(encoding="utf-8")
        assert metadata["viewer"].value == "http://127.0.0.1:8766/runs/m1"

        requests = len(system.requests)
        rescored = defs.resolve_job_def("rescore").execute_in_process(
            instance=instance, partition_key="m1"
        )
        assert rescored.success
        assert len(system.requests) == requests
        assert [path.name for path in archive.scorings()] == ["0001", "0002"]
        texts = _event_texts(instance)
        assert "pass_rate" in texts
        assert SECRET not in texts and "kern-t01" not in texts and "priv-t01" not in texts


@pytest.mark.e2e
def test_changed_rubric_makes_verdicts_stale(project_path: Path, system: FakeThreadAPI) -> None:
    rubric = add_rubric(project_path)
    defs = build_definitions(project_path)
    key = dg.AssetKey("verdicts")
    with dg.instance_for_test() as instance:
        assert _evaluate(defs, instance, "s1").success
        fresh = get_stale_status_resolver(instance, list(defs.assets or []))
        assert fresh.get_status(key, "s1") == StaleStatus.FRESH
        check = (
            defs.resolve_job_def("rescore")
            .execute_in_process(instance=instance, partition_key="s1")
            .get_asset_check_evaluations()
        )
        assert check and all(evaluation.passed for evaluation in check)

        rubric.write_text("Is het antwoord helder en volledig?\n", encoding="utf-8")
        changed = build_definitions(project_path)
        resolver = get_stale_status_resolver(instance, list(changed.assets or []))
        assert resolver.get_status(key, "s1") == StaleStatus.STALE
        causes = resolver.get_stale_root_causes(key, "s1")
        assert any("code version" in cause.reason for cause in causes)

        assert _evaluate(changed, instance, "s2").success
        evaluations = [
            evaluation
            for event in instance.get_records_for_run(instance.get_runs(limit=1)[0].run_id).records
            if (evaluation := _check_evaluation(event)) is not None
        ]
        assert evaluations and not evaluations[-1].passed
        outdated = evaluations[-1].metadata["outdated"].value
        assert "s1" in str(outdated) and "s2" not in str(outdated)


def _check_evaluation(record: Any) -> Any:
    event = record.event_log_entry.dagster_event
    if event is not None and event.event_type_value == "ASSET_CHECK_EVALUATION":
        return event.event_specific_data
    return None


def test_the_nightly_schedule_asks_for_a_named_run_at_its_cron(project_path: Path) -> None:
    defs = build_definitions(project_path, nightly_cron="30 3 * * *")
    with dg.instance_for_test() as instance:
        schedule = defs.resolve_schedule_def("nightly")
        assert schedule.cron_schedule == "30 3 * * *"
        with dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=datetime(2026, 11, 30, 3, 30, tzinfo=UTC),
            repository_def=defs.get_repository_def(),
        ) as context:  # outside a with, the context leaves an instance current for later tests
            request = schedule.evaluate_tick(context).run_requests
        assert request is not None and len(request) == 1
        assert request[0].run_key == "nightly-20261130t033000z"


def _seal_and_change(project_path: Path) -> None:
    from soev_pipeline.cli import load
    from soev_pipeline.project import write_seal

    tests = [case for case in load(project_path).cases() if case.split == "test"]
    write_seal(project_path.parent, tests, append=False)
    kern = project_path.parent / "suites" / "kern" / "kern.yaml"
    kern.write_text(kern.read_text().replace(SECRET, SECRET + " gewijzigd"), encoding="utf-8")


def test_a_broken_seal_names_no_case_in_the_ui(project_path: Path) -> None:
    """Each Dagster run process loads the definitions anew, so the code location is the
    one place a broken seal shows, by its count alone."""
    _seal_and_change(project_path)
    with pytest.raises(Exception) as raised:
        build_definitions(project_path)
    assert "1 sealed test case changed" in str(raised.value)
    assert "kern-t01" not in str(raised.value) and raised.value.__context__ is None
