"""`soev_pipeline.evaluate()` and `rescore()`: the Python entry points the CLI calls, as a
notebook would use them (docs/python-api.md)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import soev_pipeline
from soev_pipeline import evaluate, rescore
from soev_pipeline.api import execute, run_sync
from soev_pipeline.core.errors import ArmError, ProjectError, UnreachableSystemError
from soev_pipeline.run import RunArchive
from soev_pipeline.run.progress import Progress, Step
from soev_pipeline.run.service import RunSelection
from soev_pipeline.runtime import BuiltinRuntime, RuntimeBindings, resolve
from tests.conftest import write_project
from tests.support.thread_api import NOWHERE, FakeThreadAPI, Reply, Response, problem
from tests.support.tracker import RecordingTracker

pytestmark = pytest.mark.e2e


class Steps(Progress):
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def started(self, step: Step) -> None:
        self.steps.append(step)


def test_evaluate_then_rescore_return_the_reports_of_the_archive(
    project_path: Path, system: FakeThreadAPI
) -> None:
    steps = Steps()
    report = evaluate(project_path, k=2, suites=["kern"], run_id="py1", progress=steps)
    assert steps.steps == ["attempt", "grade", "aggregate"]
    assert report.run_id == "py1" and report.k == 2 and list(report.suites) == ["kern"]
    assert report.cases and all(len(case.attempts) == 2 for case in report.cases)
    archive = RunArchive(project_path.parent / "runs", "py1")
    assert len(list(archive.iter_evidence())) == 2 * report.overall.cases
    asked = len(system.requests)
    again = rescore(soev_pipeline.load(project_path), "py1", offline=True)
    assert len(system.requests) == asked  # a rescore asks the assistant nothing
    assert again.scoring.scoring == "0002"
    assert again.model_dump(exclude={"scoring"}) == report.model_dump(exclude={"scoring"})


def test_in_a_running_event_loop_evaluate_runs_on_a_thread(
    project_path: Path, system: FakeThreadAPI
) -> None:
    async def notebook_cell() -> float | None:
        return evaluate(project_path, split="dev", run_id="py2").overall.pass_rate

    assert asyncio.run(notebook_cell()) is not None


def test_bad_input_raises_the_errors_the_cli_prints(project_path: Path, tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="no suite 'geen'"):
        evaluate(project_path, suites=["geen"])
    with pytest.raises(ProjectError, match="k must be between 1 and 1000"):
        evaluate(project_path, k=0)
    unreachable = write_project(tmp_path / "weg", NOWHERE)
    with pytest.raises(ArmError, match="cannot reach"):
        evaluate(unreachable, run_id="weg")
    assert not (unreachable.parent / "runs" / "weg").exists()  # refused before archiving


def test_a_run_at_a_wrong_route_raises_and_resumes_once_the_route_is_right(
    tmp_path: Path,
) -> None:
    with FakeThreadAPI(lambda text, history: Reply("Zes weken.")) as system:
        project = write_project(tmp_path / "p", system.url + "verkeerd/")
        with pytest.raises(UnreachableSystemError) as stopped:
            evaluate(project, run_id="w1")
        assert isinstance(stopped.value, ArmError)
        assert (stopped.value.reason, stopped.value.attempts) == ("HTTP 404", 6)
        assert stopped.value.base_url == system.url + "verkeerd/"
        archive = RunArchive(project.parent / "runs", "w1")
        assert archive.exists() and not list(archive.iter_evidence()) and not archive.scorings()
        write_project(tmp_path / "p", system.url)
        report = evaluate(project, run_id="w1", resume=True)
    assert report.overall.attempts == report.expected_attempts == 6
    assert report.unrun.attempts == 0


def test_retry_unrun_false_leaves_the_attempts_that_did_not_run(tmp_path: Path) -> None:
    asked: set[str] = set()

    def failing_once(text: str, history: list[str]) -> Reply | Response:
        """A 500 (which the arm does not retry) to the first try of each conversation."""
        if not history and text not in asked:
            asked.add(text)
            return problem(500, "internal_error", "try again")
        return Reply("Zes weken.")

    with FakeThreadAPI(failing_once) as system:
        project = write_project(tmp_path / "p", system.url)
        left = evaluate(project, run_id="r1", retry_unrun=False)
        asked.clear()
        retried = evaluate(project, run_id="r2")
    assert left.unrun.attempts == 6 and left.inconclusive
    assert retried.unrun.attempts == 0 and not retried.inconclusive


def test_a_cancelled_evaluation_keeps_its_attempts_and_resumes(tmp_path: Path) -> None:
    answered: list[str] = []

    def slow_after_two(text: str, history: list[str]) -> Reply:
        if not history:  # the first turn of an attempt
            answered.append(text)
        if len(answered) > 2:
            import time

            time.sleep(0.2)
        return Reply("De bezwaartermijn is zes weken (artikel 6:7 Awb).")

    with FakeThreadAPI(slow_after_two) as system:
        project = write_project(tmp_path / "p", system.url, system={"concurrency": 1})

        async def cancel_after_two() -> None:
            task = asyncio.create_task(soev_pipeline.evaluate_run(project, run_id="c1"))
            evidence = project.parent / "runs" / "c1" / "evidence.jsonl"
            while not (evidence.exists() and evidence.read_text().count("\n") >= 2):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(cancel_after_two())
        archive = RunArchive(project.parent / "runs", "c1")
        done = archive.completed()
        assert len(done) >= 2 and not archive.scorings()
        asked_before = len(answered)
        report = evaluate(project, run_id="c1", resume=True)
    lines = list(archive.iter_evidence())
    assert len(lines) == len({(e.case_id, e.attempt) for e in lines}) == report.overall.attempts
    # the resume asked only for what was missing (the one cancelled in flight included)
    assert len(answered) - asked_before == report.overall.attempts - len(done)


@pytest.mark.parametrize(
    ("setting", "why"),
    [({"k": 100_000}, "k must be between 1 and 1000"), ({"workers": "100000"}, "1 to 64")],
)
def test_limits_are_refused_before_anything_is_archived(
    project_path: Path,
    system: FakeThreadAPI,
    monkeypatch: pytest.MonkeyPatch,
    setting: dict,
    why: str,  # type: ignore[type-arg]
) -> None:
    if "workers" in setting:
        monkeypatch.setenv("SOEV_GRADE_WORKERS", setting["workers"])
    with pytest.raises(ProjectError, match=why):
        evaluate(project_path, run_id="big", k=setting.get("k", 1))
    assert not (project_path.parent / "runs" / "big").exists()
    assert system.requests == []


class Publishing:
    """The built-in provider, with a tracker that remembers the runs it was given."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.inner = BuiltinRuntime(state_dir)
        self.tracker = RecordingTracker()

    @asynccontextmanager
    async def open(self, loaded: Any, *, operation: Any) -> AsyncIterator[RuntimeBindings]:
        async with self.inner.open(loaded, operation=operation) as bindings:
            yield dataclasses.replace(bindings, tracker=self.tracker)

    @property
    def published(self) -> list[str]:
        """The run ids of what the tracker was given."""
        return [str(run["report"]["run_id"]) for run in self.tracker.published]


def test_every_call_of_execute_leaves_the_same_files_and_publishes_only_a_new_run(
    project_path: Path, system: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules every front end shares live in `execute`: each scoring gets report.json and
    report.html, and the tracker gets a run whose evidence the same call made."""
    provider = Publishing()
    monkeypatch.setattr(resolve, "resolve_runtime", lambda name, state=None: provider)
    made = run_sync(execute(project_path, "e1", selection=RunSelection(suites=("kern",))))
    assert made.steps == ("attempt", "grade", "aggregate") and provider.published == ["e1"]
    rescored = run_sync(execute(project_path, "e1", steps=["grade", "aggregate"]))
    reported = run_sync(execute(project_path, "e1", steps=["aggregate"]))
    assert provider.published == ["e1"]  # neither a rescore nor a report again publishes
    for evaluation in (made, rescored):
        assert evaluation.html_report is not None and evaluation.html_report.exists()
        assert (evaluation.html_report.parent / "report.json").exists()
        assert (evaluation.html_report.parent / "index.json").exists()
    assert reported.scoring is not None and rescored.scoring is not None
    assert reported.scoring.path == rescored.scoring.path  # the latest scoring, reported again
    with pytest.raises(ValueError, match="contiguous"):
        run_sync(execute(project_path, "e1", steps=["attempt", "aggregate"]))


def test_graded_is_called_once_the_grade_step_is_done_before_the_report(
    project_path: Path, system: FakeThreadAPI
) -> None:
    seen: list[tuple[tuple[str, ...], bool, bool]] = []

    def graded(evaluation: soev_pipeline.Evaluation) -> None:
        assert evaluation.scoring is not None and evaluation.attempted is not None
        scoring = evaluation.scoring.path
        reported = (scoring / "report.json").exists()
        seen.append((evaluation.steps, evaluation.report is None, reported))

    made = run_sync(
        execute(project_path, "g1", selection=RunSelection(suites=("kern",)), graded=graded)
    )
    assert seen == [(("attempt", "grade", "aggregate"), True, False)]
    assert made.report is not None
    run_sync(execute(project_path, "g1", steps=["aggregate"], graded=graded))
    assert len(seen) == 1  # no grade step, no call


def test_the_report_and_its_pages_are_made_with_the_collector_paused(
    project_path: Path, system: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from soev_pipeline.run import service
    from soev_pipeline.view import html_report

    seen: list[tuple[str, bool]] = []
    aggregate_run, write_pages = service.aggregate_run, html_report.write_scoring_pages

    def aggregating(*args: Any, **kwargs: Any) -> Any:
        seen.append(("aggregate", gc.isenabled()))
        return aggregate_run(*args, **kwargs)

    def writing(*args: Any, **kwargs: Any) -> Any:
        seen.append(("pages", gc.isenabled()))
        return write_pages(*args, **kwargs)

    monkeypatch.setattr("soev_pipeline.api.aggregate_run", aggregating)
    monkeypatch.setattr(html_report, "write_scoring_pages", writing)
    assert gc.isenabled()
    made = run_sync(execute(project_path, "c1", selection=RunSelection(suites=("kern",))))
    assert made.report is not None
    assert seen == [("aggregate", False), ("pages", False)]
    assert gc.isenabled()  # on again once they are done
