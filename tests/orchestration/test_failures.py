"""What a Dagster step shows when the run cannot reach the assistant properly: the one line
the CLI prints, as the step's failure, and a run kept for a re-execution."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from soev_pipeline.orchestration import definitions_for
from soev_pipeline.run import RunArchive
from tests.conftest import write_project
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]


def test_an_evaluation_at_a_wrong_route_fails_its_step_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    with FakeThreadAPI(lambda text, history: Reply("Zes weken.")) as system:
        project = write_project(tmp_path / "p", system.url + "verkeerd/")
        defs = definitions_for(project)
        with dg.DagsterInstance.get() as instance:
            instance.add_dynamic_partitions("runs", ["w1"])
            result = defs.resolve_job_def("evaluate").execute_in_process(
                instance=instance, partition_key="w1", raise_on_error=False
            )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    data = failure.step_failure_data.user_failure_data
    assert data is not None and data.description is not None
    assert "the first 6 attempts of run 'w1' all failed with HTTP 404" in data.description
    assert f"system.base_url {system.url}verkeerd/" in data.description
    assert "\n" not in data.description
    archive = RunArchive(project.parent / "runs", "w1")
    assert archive.exists() and not archive.scorings()  # kept for a re-execution, not graded
