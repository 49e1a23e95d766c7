"""`soev-evals run` starts the attempts before Dagster has loaded: the `evaluate` run's
`attempt` step waits for them and records them as its own."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest

from tests.support.cli import invoke
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = pytest.mark.e2e


def _slow(text: str, history: list[str]) -> Reply:
    time.sleep(0.2)
    return Reply("De termijn is zes weken (artikel 6:7 Awb).", refs=["BWBR0005537/artikel-6:7"])


def test_the_attempts_start_before_the_dagster_run_and_are_recorded_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import write_project

    home = tmp_path / "dagster-home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with FakeThreadAPI(_slow) as system:
        project = write_project(tmp_path / "p", system.url)
        result = invoke("run", "--project", project, "--run-id", "h1", "--k", "2")
    assert result.status == 0, result.err
    lines = (project.parent / "runs" / "h1" / "evidence.jsonl").read_text().splitlines()
    first_attempt = min(datetime.fromisoformat(json.loads(line)["started_at"]) for line in lines)
    with dg.DagsterInstance.get() as instance:
        (run,) = [r for r in instance.get_runs() if r.job_name == "evaluate"]
        assert run.status == dg.DagsterRunStatus.SUCCESS
        record = instance.get_run_record_by_id(run.run_id)
        assert record is not None and record.start_time is not None
        assert first_attempt.timestamp() < record.start_time
        evidence = instance.fetch_materializations(dg.AssetKey("evidence"), limit=1).records
        metadata = evidence[0].asset_materialization.metadata  # type: ignore[union-attr]
        assert metadata["run_now"].value == len(lines) == metadata["attempts"].value
        assert metadata["resumed_from"].value == 0
