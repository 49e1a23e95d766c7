"""A new evaluation from the UI or the schedule: no partition key to type, no side effect
on a preview; the run evaluates and records its assets itself."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from soev_pipeline.orchestration import definitions_for
from soev_pipeline.orchestration.new_evaluation import EVALUATE_OP, REQUESTED_RUN
from soev_pipeline.project import load as load_project
from soev_pipeline.run import RunArchive
from tests.conftest import write_project
from tests.orchestration.test_definitions import add_rubric
from tests.support.thread_api import NOWHERE, FakeThreadAPI

pytestmark = pytest.mark.usefixtures("no_instance_left_current")


def _request(defs: dg.Definitions, instance: dg.DagsterInstance, **config: object):  # type: ignore[no-untyped-def]
    return defs.resolve_job_def("new_evaluation").execute_in_process(
        instance=instance,
        run_config={"ops": {EVALUATE_OP: {"config": config}}},
        raise_on_error=False,
    )


def _requested(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> str:
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    return run.tags[REQUESTED_RUN]


@pytest.mark.e2e
def test_a_new_evaluation_runs_at_once_and_records_its_partition(
    project_path: Path, system: FakeThreadAPI
) -> None:
    defs = definitions_for(project_path)
    with dg.instance_for_test() as instance:
        result = _request(defs, instance, suites=["kern"], split="dev", k=2)
        assert result.success
        run_id = _requested(instance, result)
        assert instance.has_dynamic_partition("runs", run_id)
        archive = RunArchive(project_path.parent / "runs", run_id)
        manifest = archive.manifest()
        assert (manifest.suites, manifest.split, manifest.k) == (("kern",), "dev", 2)
        assert system.texts
        recorded = {
            materialization.asset_key.to_user_string(): materialization.partition
            for materialization in result.asset_materializations_for_node(EVALUATE_OP)
        }
        assert recorded["report"] == recorded["verdicts"] == recorded["evidence"] == run_id
        (check,) = [
            evaluation
            for evaluation in result.get_asset_check_evaluations()
            if evaluation.check_name == "no_significant_regression"
        ]
        assert check.passed and check.partition == run_id
        assert instance.get_runs(filters=dg.RunsFilter(job_name="evaluate")) == []
        # recorded with Dagster's provenance, as the asset job records: fresh now
        resolver = get_stale_status_resolver(instance, list(defs.assets or []))
        for name in ("evidence", "verdicts", "report"):
            assert resolver.get_status(dg.AssetKey(name), run_id) == StaleStatus.FRESH, name


@pytest.mark.e2e
def test_an_evaluation_that_cannot_reach_the_assistant_leaves_no_partition(
    tmp_path: Path,
) -> None:
    """It fails with the CLI's one line before anything is archived, and adds no run
    partition that a backfill would later stumble on."""
    project = write_project(tmp_path / "down", NOWHERE)
    defs = definitions_for(project)
    with dg.instance_for_test() as instance:
        result = _request(defs, instance, run_id="down1")
        assert not result.success
        (failure,) = [event for event in result.all_events if event.is_step_failure]
        error = failure.step_failure_data.error  # type: ignore[union-attr]
        assert error is not None and "Traceback" not in error.message
        assert "127.0.0.1" in error.message
        assert instance.get_dynamic_partitions("runs") == []
        assert not RunArchive(project.parent / "runs", "down1").exists()


def test_a_request_refuses_a_bad_selection_with_one_line(project_path: Path) -> None:
    defs = definitions_for(project_path)
    with dg.instance_for_test() as instance:
        unknown = _request(defs, instance, suites=["geen-suite"])
        assert not unknown.success
        (failure,) = [event for event in unknown.all_events if event.is_step_failure]
        error = failure.step_failure_data.error  # type: ignore[union-attr]
        assert error is not None and "no suite 'geen-suite'" in error.message
        assert "Traceback" not in error.message
        bad = _request(defs, instance, run_id="Niet Geldig")
        assert not bad.success
        assert instance.get_dynamic_partitions("runs") == []


def test_previewing_the_nightly_tick_adds_no_partition(project_path: Path) -> None:
    defs = definitions_for(project_path)
    with dg.instance_for_test() as instance:
        schedule = defs.resolve_schedule_def("nightly")
        with dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 12, 1, 2, tzinfo=UTC)
        ) as context:
            request = schedule.evaluate_tick(context).run_requests[0]  # type: ignore[index]
        assert instance.get_dynamic_partitions("runs") == []
        assert request.run_config["ops"][EVALUATE_OP]["config"] == {
            "run_id": "nightly-20261201t020000z"
        }
        assert schedule.job_name == "new_evaluation"


@pytest.mark.e2e
def test_evaluate_on_an_archived_partition_resumes_it(
    project_path: Path, system: FakeThreadAPI
) -> None:
    defs = definitions_for(project_path)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("runs", ["twee"])
        job = defs.resolve_job_def("evaluate")
        assert job.execute_in_process(instance=instance, partition_key="twee").success
        asked = len(system.texts)
        again = job.execute_in_process(instance=instance, partition_key="twee")
        assert again.success and len(system.texts) == asked
        archive = RunArchive(project_path.parent / "runs", "twee")
        assert [path.name for path in archive.scorings()] == ["0001", "0002"]


def test_the_watch_records_the_suites_and_notices_a_prompt_edit_without_a_reload(
    project_path: Path,
) -> None:
    rubric = add_rubric(project_path)
    original = rubric.read_text(encoding="utf-8")
    defs = definitions_for(project_path)

    def tick(instance: dg.DagsterInstance) -> dg.SensorExecutionData:
        watch = defs.resolve_sensor_def("prompts_watch")
        repository = defs.get_repository_def()  # within the instance: Dagster reads its state
        with dg.build_sensor_context(
            instance=instance, repository_def=repository, resources=defs.resources
        ) as context:
            return watch.evaluate_tick(context)

    with dg.instance_for_test() as instance:
        first = tick(instance).run_requests or []
        # a new instance: each suite and the prompts get recorded (no "not materialized")
        assert sorted((r.job_name, r.partition_key) for r in first) == [
            ("check_prompts", None),
            ("load_suites", "kern"),
            ("load_suites", "privacy"),
        ]
        assert defs.resolve_job_def("check_prompts").execute_in_process(instance=instance).success
        for suite in ("kern", "privacy"):
            load = defs.resolve_job_def("load_suites")
            assert load.execute_in_process(instance=instance, partition_key=suite).success
        quiet = tick(instance)
        assert not quiet.run_requests and quiet.skip_message
        rubric.write_text("Is het antwoord helder en volledig?\n", encoding="utf-8")
        (request,) = tick(instance).run_requests or []
        edited = load_project(project_path)  # what the run that the request starts loads
        assert request.job_name == "check_prompts"
        assert request.run_key is not None
        assert request.run_key.startswith(f"prompts-{edited.prompts_version}-")

        # recorded, then edited back: the old prompts are asked for again, not taken for a
        # request that was made already
        recorded = definitions_for(project_path).resolve_job_def("check_prompts")
        assert recorded.execute_in_process(instance=instance).success
        assert not tick(instance).run_requests
        rubric.write_text(original, encoding="utf-8")
        (again,) = tick(instance).run_requests or []
        assert again.job_name == "check_prompts"
        (first_prompts,) = [r.run_key for r in first if r.job_name == "check_prompts"]
        assert again.run_key != first_prompts
        assert again.run_key is not None and first_prompts is not None
        assert again.run_key.split("-after-")[0] == first_prompts.split("-after-")[0]
