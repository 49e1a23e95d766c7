"""The asset check `no_significant_regression`: fails on a real regression, passes on a rerun."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from soev_pipeline.orchestration import definitions_for
from tests.support.project import dump
from tests.support.thread_api import NOWHERE, FakeThreadAPI, Reply, Response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]


def _project(root: Path, url: str, count: int = 8) -> Path:
    cases = [{"id": f"c-{i}", "input": f"Vraag {i}?"} for i in range(count)]
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
        assert metadata["pass_rate"].value == 0.0
        assert metadata["pass_rate_ci95_low"].value == 0.0
        assert 0 < metadata["pass_rate_ci95_high"].value < 0.5
        assert metadata["vs_previous/delta"].value == 0.0
        assert metadata["vs_previous/p_value"].value == 1.0


def test_an_outage_makes_the_check_warn_that_it_cannot_decide(tmp_path: Path) -> None:
    """A gateway answering 503 is not a worse assistant: the check says inconclusive (WARN)
    with the failure codes, and the next run is compared with the run before the outage."""
    down = False

    def assistant(text: str, history: list[str]) -> Reply | Response:
        if down:
            return Response(503, {"code": "service_unavailable", "detail": "onderhoud"})
        return Reply("Zes weken.")

    with FakeThreadAPI(assistant) as system, dg.instance_for_test() as instance:
        defs = definitions_for(_project(tmp_path / "p", system.url))
        assert _check(defs, instance, "a").passed
        down = True
        outage = _check(defs, instance, "b")
        assert not outage.passed and outage.severity == dg.AssetCheckSeverity.WARN
        assert (outage.description or "").startswith("inconclusive: 8 of 8 attempts did not run")
        assert outage.metadata["inconclusive"].value is True
        assert outage.metadata["unrun/service_unavailable"].value == 8
        down = False
        after = _check(defs, instance, "c")
        assert after.passed and after.metadata["baseline"].value == "a"


def test_a_5xx_that_could_hide_a_regression_makes_the_check_warn(tmp_path: Path) -> None:
    """6 of 130 questions answered with HTTP 500 instead of a correct answer: too few to
    make the run inconclusive, enough that, counted as failed, they make a significant
    regression. The check says the gate cannot decide (WARN), and what to do."""
    failing = False

    def assistant(text: str, history: list[str]) -> Reply | Response:
        if failing and int(text.split()[1].rstrip("?")) < 6:
            return Response(500, {"code": "internal", "detail": "kapot"})
        return Reply("Zes weken.")

    with FakeThreadAPI(assistant) as system, dg.instance_for_test() as instance:
        defs = definitions_for(_project(tmp_path / "p", system.url, count=130))
        assert _check(defs, instance, "a").passed
        failing = True
        hidden = _check(defs, instance, "b")
        assert not hidden.passed and hidden.severity == dg.AssetCheckSeverity.WARN
        description = hidden.description or ""
        assert description.startswith(
            "inconclusive: the attempts that did not run could hide a regression in overall"
        )
        assert "run the suites again and compare again" in description
        assert hidden.metadata["reason"].value == "unrun_could_hide_regression"
        assert hidden.metadata["unrun/internal"].value == 6


def test_an_assistant_that_is_down_fails_the_evaluation_with_one_line(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        defs = definitions_for(_project(tmp_path / "p", NOWHERE))
        instance.add_dynamic_partitions("runs", ["weg"])
        result = defs.resolve_job_def("evaluate").execute_in_process(
            instance=instance, partition_key="weg", raise_on_error=False
        )
    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    error = failure.step_failure_data.error  # type: ignore[union-attr]
    assert error is not None and "cannot reach" in error.message
    assert "is the system under test running?" in error.message
    assert not (tmp_path / "p" / "runs" / "weg").exists()  # nothing archived: no baseline
