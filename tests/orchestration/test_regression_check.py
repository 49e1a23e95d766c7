"""The asset check `no_significant_regression`: fails on a real regression, passes on a rerun."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from soev_pipeline.orchestration import definitions_for
from tests.support.project import dump
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = pytest.mark.e2e


def _project(root: Path, url: str) -> Path:
    cases = [{"id": f"c-{i}", "input": f"Vraag {i}?"} for i in range(8)]
    dump(
        root / "suites" / "s.yaml",
        {"suite": "s", "criteria": [{"kind": "run.no_failure", "gate": True}], "cases": cases},
    )
    dump(
        root / "project.yaml",
        {
            "name": "check",
            "system": {"base_url": url, "agent": "a", "max_retries": 0},
            "suites": [{"name": "s", "files": "suites/s.yaml"}],
        },
    )
    return root / "project.yaml"


def _check(
    defs: dg.Definitions, instance: dg.DagsterInstance, run_id: str
) -> dg.AssetCheckEvaluation:
    instance.add_dynamic_partitions("runs", [run_id])
    result = defs.resolve_job_def("evaluate").execute_in_process(
        instance=instance, partition_key=run_id
    )
    assert result.success
    (evaluation,) = [
        e
        for e in result.get_asset_check_evaluations()
        if e.check_name == "no_significant_regression"
    ]
    return evaluation


def test_the_check_fails_on_a_regression_and_passes_on_an_unchanged_rerun(tmp_path: Path) -> None:
    broken = False

    def assistant(text: str, history: list[str]) -> Reply:
        return Reply(failure="kapot") if broken else Reply("Zes weken.")

    with FakeThreadAPI(assistant) as system, dg.instance_for_test() as instance:
        defs = definitions_for(_project(tmp_path / "p", system.url))
        first = _check(defs, instance, "a")
        assert first.passed and "no previous run" in (first.description or "")
        broken = True
        regressed = _check(defs, instance, "b")
        assert not regressed.passed
        assert regressed.severity == dg.AssetCheckSeverity.ERROR
        assert "regressed against run a" in (regressed.description or "")
        table = regressed.metadata["comparison"].value
        assert "| overall | 8 |" in table and "regressed" in table
        rerun = _check(defs, instance, "c")
        assert rerun.passed
        materialization = instance.fetch_materializations(dg.AssetKey("report"), limit=1)
        metadata = materialization.records[0].asset_materialization.metadata
        assert metadata["pass_rate/overall"].value == 0.0
        assert metadata["pass_rate_ci95_low/overall"].value == 0.0
        assert 0 < metadata["pass_rate_ci95_high/overall"].value < 0.5
        assert metadata["delta/overall"].value == 0.0 and metadata["p_value/overall"].value == 1.0
