"""Runs launched, terminated and re-executed in `dagster dev`, through its GraphQL API as the
UI does: a re-execution resumes the evaluation (every attempt once, nothing asked twice),
and what the UI shows of a failure is one line, not a traceback of ours."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from soev_pipeline.orchestration.failures import INTERRUPTED
from soev_pipeline.orchestration.instance import ensure_instance
from soev_pipeline.orchestration.new_evaluation import EVALUATE_OP
from tests.conftest import write_project
from tests.support.dagster_ui import DagsterUI
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]


class Held:
    """Answers the first `free` attempts at once and holds the others until released."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.asked: Counter[str] = Counter()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, text: str, history: list[str]) -> Reply:
        with self._lock:
            self.asked[text] += 1
            self.free -= 1
            held = self.free < 0
        if held:
            self.release.wait(60)
        return Reply("De bezwaartermijn is zes weken (artikel 6:7 Awb).")


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DagsterUI, Path, Held]]:
    root = tmp_path_factory.mktemp("ui-runs")
    held = Held(free=2)
    with FakeThreadAPI(held) as system:
        project = write_project(root / "p", system.url, system={"concurrency": 1})
        home = ensure_instance(root / "home")
        with DagsterUI(project, home) as running:
            yield running, project, held


def _pairs(project: Path, run_id: str) -> Counter[tuple[str, int]]:
    lines = (project.parent / "runs" / run_id / "evidence.jsonl").read_text().splitlines()
    return Counter((json.loads(line)["case_id"], json.loads(line)["attempt"]) for line in lines)


def _wait_for_evidence(project: Path, run_id: str) -> None:
    evidence = project.parent / "runs" / run_id / "evidence.jsonl"
    deadline = 120.0
    import time

    began = time.monotonic()
    while not (evidence.exists() and evidence.read_text().count("\n") >= 1):
        assert time.monotonic() - began < deadline, "no evidence archived"
        time.sleep(0.2)


def _finished(ui: DagsterUI, run_id: str) -> str:
    runs = ui.wait_for(
        lambda runs: any(
            r["runId"] == run_id and r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs
        ),
        timeout=180,
    )
    return next(r["status"] for r in runs if r["runId"] == run_id)


def test_a_terminated_new_evaluation_says_so_in_one_line_and_its_reexecution_resumes(
    ui: tuple[DagsterUI, Path, Held],
) -> None:
    dagster, project, held = ui
    held.release.clear()
    first = dagster.launch("new_evaluation", {"ops": {EVALUATE_OP: {"config": {"run_id": "t1"}}}})
    _wait_for_evidence(project, "t1")
    dagster.terminate(first)
    assert _finished(dagster, first) in ("CANCELED", "FAILURE")
    messages = [error["message"] for error in dagster.errors(first)]
    assert any(INTERRUPTED in message for message in messages), messages
    assert not any("DagsterExecutionInterruptedError" in m for m in messages), messages
    done = _pairs(project, "t1")
    held.release.set()

    again = dagster.reexecute(first)
    assert _finished(dagster, again) == "SUCCESS"
    pairs = _pairs(project, "t1")
    assert set(pairs.values()) == {1} and set(done) <= set(pairs)  # each attempt once
    assert max(held.asked.values()) <= 2  # at most the one in flight was asked again
    assert sorted(path.name for path in (project.parent / "runs").iterdir()) == ["t1"]


def test_an_evaluate_run_reexecuted_from_failure_resumes_its_partition(
    ui: tuple[DagsterUI, Path, Held],
) -> None:
    dagster, project, held = ui
    held.free, held.asked = 2, Counter()
    held.release.clear()
    with dg.DagsterInstance.from_config(str(dagster._env["DAGSTER_HOME"])) as instance:
        instance.add_dynamic_partitions("runs", ["t2"])
    first = dagster.launch("evaluate", {}, **{"dagster/partition": "t2"})
    _wait_for_evidence(project, "t2")
    dagster.terminate(first)
    assert _finished(dagster, first) in ("CANCELED", "FAILURE")
    held.release.set()
    again = dagster.reexecute(first, "FROM_FAILURE")
    assert _finished(dagster, again) == "SUCCESS"
    assert set(_pairs(project, "t2").values()) == {1}
    assert max(held.asked.values()) <= 2


def test_a_bad_request_fails_with_every_problem_in_one_line(
    ui: tuple[DagsterUI, Path, Held],
) -> None:
    dagster, _, _ = ui
    config = {"run_id": "Niet Geldig", "suites": ["geen"]}
    run = dagster.launch("new_evaluation", {"ops": {EVALUATE_OP: {"config": config}}})
    assert _finished(dagster, run) == "FAILURE"
    (step, *_) = dagster.errors(run)
    line = step["message"]
    assert "run id 'Niet Geldig' is not valid" in line and "no suite 'geen'" in line
    assert "\n" not in line.strip()
    assert step["cause"] is None  # no chained traceback of the error behind the line
