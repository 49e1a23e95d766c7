"""A new run's attempts are graded as they are archived (`overlap.attempt_and_grade`): the
overlap itself, shown by an assistant that waits for a verdict of an earlier attempt; the
verdicts byte for byte those of a grading after the run, on disk and in object storage;
and the runs that fall back to grading after their attempts, or leave no scoring."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from soev_pipeline.core.models import Case, Evidence, Failure, Turn, Usage
from soev_pipeline.project import load, load_for_sealing
from soev_pipeline.project.sealing import write_seal
from soev_pipeline.run import RunArchive, grading, overlap, run_attempts, service
from soev_pipeline.run.archive import REPORT, SCORING, VERDICTS
from soev_pipeline.run.overlap import attempt_and_grade
from soev_pipeline.run.pool import GradingWorkerError
from soev_pipeline.run.progress import Progress, Step
from soev_pipeline.run.report import build_report, write_report
from soev_pipeline.run.results import GradingSummary
from soev_pipeline.run.run_attempts import previous_attempts, read_previous_ahead
from soev_pipeline.run.service import RunSelection, aggregate, grade
from soev_pipeline.run.unrun import read_ledger
from soev_pipeline.runtime import RuntimeBindings
from tests.support.moto import S3

HOOKS = '''\
"""A kind that notes each attempt it grades, on the event loop."""

import asyncio

from soev_pipeline.core import FrozenModel
from soev_pipeline.criteria import Builtin, outcome


class NoParams(FrozenModel):
    pass


GRADED: list[str] = []
EVENTS: dict[str, asyncio.Event] = {}


def event(case_id):
    return EVENTS.setdefault(case_id, asyncio.Event())


async def noted(case, evidence, *, params, ctx):
    GRADED.append(case.id)
    event(case.id).set()
    return outcome(passed=evidence.reply is not None, detail="noted")


CRITERIA = [Builtin("test.noted", NoParams, noted)]
'''

GUARD_S = 60.0
"""How long the assistant waits for a verdict before it gives up: a guard against a hang
when grading does not overlap, never reached when it does."""


def _project(
    directory: Path, cases: int, concurrency: int, *, test_cases: int = 0, max_tokens: int = 50
) -> Path:
    directory.mkdir(parents=True)
    (directory / "overlap_hooks.py").write_text(HOOKS, encoding="utf-8")
    suite = {
        "suite": "s",
        "criteria": [
            {"kind": "test.noted"},
            {"kind": "run.no_failure", "gate": True},
            {"kind": "usage.max_tokens", "max": max_tokens},
        ],
        "cases": [{"id": f"c{number:03d}", "input": f"vraag {number}"} for number in range(cases)]
        + [
            {"id": f"t{number:03d}", "input": f"toets {number}", "split": "test"}
            for number in range(test_cases)
        ],
    }
    (directory / "s.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    project = {
        "name": "overlap",
        "hooks": "overlap_hooks",
        "system": {"base_url": "http://127.0.0.1:9/", "concurrency": concurrency},
        "suites": [{"name": "s", "files": "s.yaml"}],
    }
    path = directory / "project.yaml"
    path.write_text(yaml.safe_dump(project), encoding="utf-8")
    return path


def _hooks() -> ModuleType:
    return sys.modules["overlap_hooks"]


class Assistant:
    """An arm that answers at once, except that attempt `n` of case `c<i>` first waits for
    `wait_for(c<i>, n)` (a case id whose verdict must exist), that the attempts in `unrun`
    fail once with a 503, and those in `broken` with a malformed stream (a quality
    failure); a case in `wordy` uses many tokens."""

    def __init__(
        self,
        wait_for: Mapping[tuple[str, int], str] | None = None,
        unrun: set[tuple[str, int]] | None = None,
        hang: str | None = None,
        broken: set[tuple[str, int]] | None = None,
        wordy: set[str] | None = None,
    ) -> None:
        self.wait_for = dict(wait_for or {})
        self.unrun = set(unrun or ())
        self.broken = set(broken or ())
        self.wordy = set(wordy or ())
        self.hang = hang
        self.seen_graded: list[int] = []

    async def attempt(
        self, case: Case, *, attempt: int, fields: Mapping[str, Any] | None = None
    ) -> Evidence:
        started = datetime(2026, 1, 1, tzinfo=UTC)
        earlier = self.wait_for.get((case.id, attempt))
        if earlier is not None:
            await asyncio.wait_for(_hooks().event(earlier).wait(), GUARD_S)
        if case.id == self.hang:
            await asyncio.Event().wait()
        self.seen_graded.append(len(_hooks().GRADED))
        text = case.turns[0]
        if (case.id, attempt) in self.unrun:
            self.unrun.discard((case.id, attempt))
            failure = Failure(code="http_error", detail="unavailable", http_status=503)
            turn = Turn(input=text, failure=failure)
        elif (case.id, attempt) in self.broken:
            turn = Turn(input=text, failure=Failure(code="malformed_stream", detail="no end"))
        else:
            usage = Usage(prompt_tokens=5, completion_tokens=700 if case.id in self.wordy else 7)
            turn = Turn(input=text, reply=f"antwoord op {text}", usage=usage)
        return Evidence(
            case_id=case.id,
            suite=case.suite,
            split=case.split,
            attempt=attempt,
            turns=(turn,),
            reply=turn.reply,
            started_at=started,
            finished_at=started,
        )

    async def aclose(self) -> None:
        pass


def _run(
    project: Path,
    runs: str | Path,
    arm: Assistant,
    *,
    k: int = 1,
    resume: bool = False,
    run_id: str = "r1",
    retry_unrun: bool | None = None,
) -> Any:
    loaded = load(project)
    return asyncio.run(
        attempt_and_grade(
            loaded,
            runs,
            run_id,
            RunSelection(k=k),
            RuntimeBindings(arm=arm),  # type: ignore[arg-type]
            resume=resume,
            retry_unrun=retry_unrun,
        )
    )


def _regraded(project: Path, runs: str | Path) -> bytes:
    """The verdicts of a grading of the archive after the run (a rescore)."""
    archive = RunArchive(runs, "r1")
    scoring = asyncio.run(grade(load(project), archive, judge=None))
    return (scoring.path / VERDICTS).read_bytes()


def test_an_attempt_is_graded_while_later_ones_run(tmp_path: Path) -> None:
    """Attempt c004 is only answered once c000 has its verdict: graded after the run, c000
    would never be graded, and c004 would wait until its guard fails the run."""
    project = _project(tmp_path / "p", cases=8, concurrency=1)
    arm = Assistant(wait_for={("c004", 0): "c000"})
    attempted, scoring = _run(project, tmp_path / "runs", arm)
    assert attempted.stats.failed == 0
    assert arm.seen_graded[4] >= 1  # c000 was graded before c004 was answered
    assert scoring.summary.attempts == 8 and scoring.path.name == "0001"
    assert (scoring.path / SCORING).exists() and not (scoring.path / REPORT).exists()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_streamed_verdicts_are_those_of_a_grading_after_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    monkeypatch.setenv("SOEV_GRADE_WORKERS", workers)
    project = _project(tmp_path / "p", cases=60, concurrency=4)
    arm = Assistant(wait_for={("c050", 1): "c010"})
    _, scoring = _run(project, tmp_path / "runs", arm, k=2)
    assert scoring.summary.attempts == 120
    assert (scoring.path / VERDICTS).read_bytes() == _regraded(project, tmp_path / "runs")


def test_the_report_folded_while_grading_is_the_one_read_back_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The aggregate step of a streamed run builds its report from what grading folded
    (the verdicts and the ledger), reading neither back: report.json is byte for byte the
    one built from the files afterwards, with several kinds, quality failures, attempts
    that did not run, test cases, k = 2 and a previous run to compare with."""
    project = _project(tmp_path / "p", cases=30, concurrency=3, test_cases=6)
    cases = load_for_sealing(project, append=False).cases()
    write_seal(project.parent, [case for case in cases if case.split == "test"], append=False)
    runs = tmp_path / "runs"
    _run(project, runs, Assistant(broken={("c004", 0)}), k=2, run_id="r0")
    aggregate(RunArchive(runs, "r0"), RunArchive(runs, "r0").scorings()[-1])
    arm = Assistant(
        unrun={("c002", 1), ("t001", 0)}, broken={("c007", 0), ("t003", 1)}, wordy={"c009"}
    )
    attempted, scoring = _run(project, runs, arm, k=2, retry_unrun=False)
    assert attempted.stats.retried == 0 and scoring.fold is not None
    assert scoring.ledger is not None
    archive = RunArchive(runs, "r1")

    def unread(*_: object) -> None:
        raise AssertionError("read back")

    assert scoring.previous is not None and scoring.previous.attempts is not None
    with monkeypatch.context() as patched:
        patched.setattr(service, "iter_graded", unread)
        patched.setattr(service, "read_ledger", unread)
        patched.setattr(run_attempts, "_previous", unread)  # r0 was read while r1 ran
        folded = aggregate(archive, scoring)
    assert folded.unrun.attempts == 2 and folded.previous is not None
    assert set(folded.criteria) == {"test.noted", "run.no_failure", "usage.max_tokens"}
    assert folded.criteria["usage.max_tokens"].fail == 2
    written = (scoring.path / REPORT).read_bytes()

    manifest = archive.manifest()
    after = build_report(
        manifest,
        grading.iter_graded(scoring.path),
        scoring=GradingSummary.model_validate_json((scoring.path / SCORING).read_bytes()),
        previous=previous_attempts(runs, manifest),
        ledger=read_ledger(archive, manifest),
    )
    assert after == folded
    again = tmp_path / "again"
    again.mkdir()
    write_report(again, after)
    assert (again / REPORT).read_bytes() == written


class Held(Assistant):
    """An assistant whose first answer waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def attempt(
        self, case: Case, *, attempt: int, fields: Mapping[str, Any] | None = None
    ) -> Evidence:
        await self.release.wait()
        return await super().attempt(case, attempt=attempt, fields=fields)


class Noted(Progress):
    def __init__(self) -> None:
        self.log: list[str] = []
        self.grading = threading.Event()

    def started(self, step: Step) -> None:
        self.log.append(f"started {step}")
        if step == "grade":
            self.grading.set()

    def attempts(self, done: int, total: int, failed: int) -> None:
        self.log.append(f"archived {done}")


def test_grading_and_the_read_ahead_begin_once_the_first_attempt_is_archived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither is needed for the first requests: begun with them, their start-up work
    (grading waits for the command's start-up thread) would take the event loop's
    interpreter lock while those requests go out."""
    project = _project(tmp_path / "p", cases=3, concurrency=1)
    progress, arm = Noted(), Held()
    read_ahead = overlap._read_ahead

    def noted_read_ahead(archive: RunArchive) -> Any:
        progress.log.append("read ahead")
        return read_ahead(archive)

    monkeypatch.setattr(overlap, "_read_ahead", noted_read_ahead)

    async def main() -> Any:
        running = asyncio.ensure_future(
            attempt_and_grade(
                load(project),
                tmp_path / "runs",
                "r1",
                RunSelection(k=1),
                RuntimeBindings(arm=arm),  # type: ignore[arg-type]
                progress=progress,
            )
        )
        # nothing is archived yet: the grade step has not begun (it would tell the
        # progress at once, from a thread, if it had)
        began = await asyncio.to_thread(progress.grading.wait, 0.5)
        assert not began and progress.log == ["started attempt"]
        arm.release.set()
        return await running

    _, scoring = asyncio.run(main())
    assert scoring.summary.attempts == 3
    first = progress.log.index("archived 1")
    assert progress.log.index("started grade") > first
    assert progress.log.index("read ahead") > first


def test_the_previous_run_read_ahead_is_read_again_once_a_run_changed(tmp_path: Path) -> None:
    """The previous run's attempts read while a run ran are taken as read only while no
    other run changed: a new scoring of the previous run (a rescore) is read again."""
    project = _project(tmp_path / "p", cases=6, concurrency=2)
    runs = tmp_path / "runs"
    _run(project, runs, Assistant(), run_id="r0")
    aggregate(RunArchive(runs, "r0"), RunArchive(runs, "r0").scorings()[-1])
    _, scoring = _run(project, runs, Assistant())
    ahead = scoring.previous
    assert ahead is not None and ahead.attempts is not None and ahead.attempts.run_id == "r0"
    manifest = RunArchive(runs, "r1").manifest()
    assert previous_attempts(runs, manifest, ahead) is ahead.attempts  # nothing changed
    assert read_previous_ahead(runs, manifest) == ahead  # the run's own files do not count
    earlier = runs / "r0" / "scorings"
    rescored = earlier / "0002"
    rescored.mkdir()
    for name in (SCORING, REPORT):
        (rescored / name).write_bytes((earlier / "0001" / name).read_bytes())
    verdicts = (earlier / "0001" / VERDICTS).read_text(encoding="utf-8")
    (rescored / VERDICTS).write_text(verdicts.replace('"passed":true', '"passed":false'))
    again = previous_attempts(runs, manifest, ahead)
    assert again is not None and again == previous_attempts(runs, manifest)
    assert again != ahead.attempts
    assert not any(any(case.passes) for case in again.cases.values())
    assert read_previous_ahead("s3://bucket/runs", manifest) is None  # no state to check


def test_in_object_storage_too(tmp_path: Path, s3: S3) -> None:
    project = _project(tmp_path / "p", cases=12, concurrency=2)
    arm = Assistant(wait_for={("c010", 0): "c001"})
    runs = s3.url()
    _, scoring = _run(project, runs, arm)
    streamed = (scoring.path / VERDICTS).read_bytes()
    assert len(streamed.splitlines()) == 12
    assert scoring.path.name == "0001"  # kept: the stream's order was the archive's
    assert scoring.previous is None  # no previous run read ahead: no state to check
    assert streamed == _regraded(project, runs)


def test_a_run_that_runs_attempts_once_more_is_graded_after_them(tmp_path: Path) -> None:
    """The retried attempts' new lines replace old ones: the stream is abandoned and the
    archive graded as it ends up, the retried attempts with their new replies."""
    project = _project(tmp_path / "p", cases=10, concurrency=2)
    arm = Assistant(unrun={("c003", 0), ("c007", 0)})
    attempted, scoring = _run(project, tmp_path / "runs", arm)
    assert attempted.stats.retried == 2
    verdicts = (scoring.path / VERDICTS).read_bytes()
    assert b'"passed":false' not in verdicts  # the retried attempts passed this time
    assert verdicts == _regraded(project, tmp_path / "runs")


def test_an_interrupted_run_leaves_no_scoring_and_resumes(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", cases=10, concurrency=1)
    runs = tmp_path / "runs"
    arm = Assistant(wait_for={("c005", 0): "c001"}, hang="c005")

    async def interrupted() -> None:
        loaded = load(project)
        run = asyncio.ensure_future(
            attempt_and_grade(
                loaded,
                runs,
                "r1",
                RunSelection(),
                RuntimeBindings(arm=arm),  # type: ignore[arg-type]
            )
        )
        await asyncio.wait_for(_hooks().event("c001").wait(), GUARD_S)  # graded: streaming
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(interrupted())
    archive = RunArchive(runs, "r1")
    assert len(archive.completed()) == 5
    assert archive.scorings() == []  # the streamed scoring was dropped, not left half made
    _, scoring = _run(project, runs, Assistant(), resume=True)
    assert scoring.summary.attempts == 10
    assert (scoring.path / VERDICTS).read_bytes() == _regraded(project, runs)


def test_a_worker_that_dies_while_attempts_run_ends_the_run_with_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempts go on to the end and stay archived; the grading's error follows them,
    and no scoring is left: a rescore grades the run."""
    monkeypatch.setenv("SOEV_GRADE_WORKERS", "2")
    parent = os.getpid()
    chunk_grade = grading._ChunkGrader.grade

    def dying(self: Any, chunk: Any) -> Any:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return chunk_grade(self, chunk)

    monkeypatch.setattr(grading._ChunkGrader, "grade", dying)
    project = _project(tmp_path / "p", cases=60, concurrency=2)
    runs = tmp_path / "runs"
    with pytest.raises(GradingWorkerError, match=r"ended unexpectedly \(killed, or out of memory"):
        _run(project, runs, Assistant())
    assert multiprocessing.active_children() == []
    archive = RunArchive(runs, "r1")
    assert len(archive.completed()) == 60
    assert archive.scorings() == []
