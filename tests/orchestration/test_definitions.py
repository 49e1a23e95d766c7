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
OP = "attempt_grade_aggregate"


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


def evaluate(defs: dg.Definitions, instance: dg.DagsterInstance, run_id: str) -> Any:
    instance.add_dynamic_partitions("runs", [run_id])
    return defs.resolve_job_def("evaluate").execute_in_process(
        instance=instance, partition_key=run_id
    )


def status(defs: dg.Definitions, instance: dg.DagsterInstance, name: str, run: str) -> Any:
    """Dagster's own stale status of a run partition, as the UI of `defs` shows it."""
    resolver = get_stale_status_resolver(instance, list(defs.assets or []))
    return resolver.get_status(dg.AssetKey(name), run)


def causes(defs: dg.Definitions, instance: dg.DagsterInstance, name: str, run: str) -> list[str]:
    resolver = get_stale_status_resolver(instance, list(defs.assets or []))
    return [cause.reason for cause in resolver.get_stale_root_causes(dg.AssetKey(name), run)]


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
        "judge_probes",
    }
    steps = {
        spec.key.to_user_string(): spec.tags["soev/step"] for spec in defs.resolve_all_asset_specs()
    }
    assert steps == {
        "suites": "load",
        "judge_prompts": "load",
        "evidence": "attempt",
        "verdicts": "grade",
        "report": "aggregate",
        "labels": "load",
        "judge_calibration": "calibrate",
        "judge_probes": "probe",
    }
    evaluate_nodes = {node.name for node in defs.resolve_job_def("evaluate").nodes}
    assert {OP, "load_prompts"} <= evaluate_nodes
    assert {node.name for node in defs.resolve_job_def("load_suites").nodes} == {"load"}
    assert defs.resolve_schedule_def("nightly").cron_schedule == "0 2 * * *"
    suites = defs.resolve_assets_def("suites")
    assert suites.partitions_def is not None
    assert suites.partitions_def.get_partition_keys() == ["kern", "privacy"]
    assert defs.resolve_job_def("evaluate").tags["soev/system"].startswith("127.0.0.1:")
    dg.Definitions.validate_loadable(defs)


def test_the_prompts_are_data_and_the_kinds_are_code(project_path: Path) -> None:
    """A prompt edit changes no code version (the prompts are the data version of
    `judge_prompts`); the grading's code version is the versions of the kinds in use."""
    defs = build_definitions(project_path)
    versions = {
        key.to_user_string(): version
        for assets in defs.assets or []
        for key, version in assets.code_versions_by_key.items()  # type: ignore[union-attr]
    }
    add_rubric(project_path)
    changed = build_definitions(project_path)
    after = {
        key.to_user_string(): version
        for assets in changed.assets or []
        for key, version in assets.code_versions_by_key.items()  # type: ignore[union-attr]
    }
    assert versions["evidence"] == after["evidence"] == "1"
    assert versions["verdicts"] != after["verdicts"]  # rubric.judge is now a kind in use
    assert all(version for version in after.values())


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
        result = evaluate(defs, instance, "m1")
        assert result.success
        assert len(system.texts) == 7  # 6 cases, kern-002 of two turns
        archive = RunArchive(project_path.parent / "runs", "m1")
        assert len(list(archive.iter_evidence())) == 6
        report = archive.latest_report()
        assert report is not None and report["suites"]["kern"]["cases"] == 4
        made = {m.asset_key.to_user_string(): m for m in result.asset_materializations_for_node(OP)}
        assert set(made) == {"evidence", "verdicts", "report"}
        assert made["evidence"].metadata["attempts"].value == 6
        assert made["evidence"].metadata["failed_attempts"].value == 1
        assert made["verdicts"].metadata["verdicts_fail"].value == 1
        metadata = made["report"].metadata
        assert metadata["pass_rate/kern"].value == pytest.approx(0.5)
        assert metadata["pass_rate/split/test"].value == pytest.approx(0.5)
        assert 0 <= metadata["pass_rate_ci95_low"].value <= 0.5
        assert metadata["verdicts/fail"].value == 1
        assert str(archive.path) in str(metadata["archive"].value)
        html = Path(str(metadata["html_report"].value))
        assert html == archive.scorings()[-1] / "report.html"
        failing = [case.case_id for case in read_report(archive).cases if case.pass_rate < 1]
        assert failing and all(case_id in html.read_text(encoding="utf-8") for case_id in failing)
        assert SECRET not in html.read_text(encoding="utf-8")
        assert metadata["viewer"].value == "http://127.0.0.1:8766/runs/m1"
        checks = result.get_asset_check_evaluations()
        assert {check.check_name for check in checks} == {
            "no_significant_regression",
            "graded_with_current_prompts",
        }

        requests = len(system.requests)
        rescored = defs.resolve_job_def("rescore").execute_in_process(
            instance=instance, partition_key="m1"
        )
        assert rescored.success
        assert len(system.requests) == requests
        assert [path.name for path in archive.scorings()] == ["0001", "0002"]
        assert (archive.scorings()[-1] / "report.html").exists()
        texts = _event_texts(instance)
        assert "pass_rate" in texts
        assert SECRET not in texts and "kern-t01" not in texts and "priv-t01" not in texts


@pytest.mark.e2e
def test_a_prompt_edit_makes_verdicts_and_reports_stale_without_a_reload(
    project_path: Path, system: FakeThreadAPI
) -> None:
    """The UI keeps the definitions it loaded; the prompts watch's run loads them anew and
    records the edited prompts. Dagster's own staleness follows, in the definitions the UI
    still holds: the verdicts and the report graded with the old prompts go stale, and a
    rescore makes them fresh again."""
    rubric = add_rubric(project_path)
    shown = build_definitions(project_path)  # what the UI holds, never reloaded below
    with dg.instance_for_test() as instance:
        assert evaluate(shown, instance, "s1").success
        assert status(shown, instance, "verdicts", "s1") == StaleStatus.FRESH
        assert status(shown, instance, "report", "s1") == StaleStatus.FRESH

        rubric.write_text("Is het antwoord helder en volledig?\n- goed\n- slecht\n", "utf-8")
        watched = build_definitions(project_path)  # a run's process loads the project anew
        checked = watched.resolve_job_def("check_prompts").execute_in_process(instance=instance)
        assert checked.success
        assert status(shown, instance, "verdicts", "s1") == StaleStatus.STALE
        assert "has a new data version" in causes(shown, instance, "verdicts", "s1")
        assert status(shown, instance, "report", "s1") == StaleStatus.STALE
        (current,) = [
            check
            for check in checked.get_asset_check_evaluations()
            if check.check_name == "graded_with_current_prompts"
        ]
        assert not current.passed and "s1" in str(current.metadata["outdated"].value)

        assert (
            watched.resolve_job_def("rescore")
            .execute_in_process(instance=instance, partition_key="s1")
            .success
        )
        assert status(shown, instance, "verdicts", "s1") == StaleStatus.FRESH
        assert status(shown, instance, "report", "s1") == StaleStatus.FRESH
        assert status(shown, instance, "evidence", "s1") == StaleStatus.FRESH


@pytest.mark.e2e
def test_a_selection_that_skips_a_step_fails_with_one_line(
    project_path: Path, system: FakeThreadAPI
) -> None:
    defs = build_definitions(project_path)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("runs", ["g1"])
        job = defs.resolve_implicit_global_asset_job_def()
        result = job.execute_in_process(
            instance=instance,
            partition_key="g1",
            asset_selection=[dg.AssetKey("evidence"), dg.AssetKey("report")],
            raise_on_error=False,
        )
        assert not result.success
        (failure,) = [event for event in result.all_events if event.is_step_failure]
        assert "a run's steps follow each other" in str(failure.step_failure_data.error)
        assert system.requests == []


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
