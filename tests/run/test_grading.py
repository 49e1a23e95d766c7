"""Grading in worker processes: the same bytes as in one process, judge and project kinds
kept here, and a worker that dies or a grading that is cancelled ends cleanly."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from soev_pipeline.core import Evidence, Turn, Usage
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.core.secrets import forget_secrets, register_secret
from soev_pipeline.corpus import CorpusLookup
from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import LoadedProject, load
from soev_pipeline.run import GradingSummary, grade_evidence
from soev_pipeline.run import grading as grading_module
from soev_pipeline.run.archive import VERDICTS, RunArchive
from soev_pipeline.run.grading import GradedLine
from soev_pipeline.run.manifest import build_manifest
from soev_pipeline.run.pool import GradingWorkerError, WorkerPool, workers_setting
from soev_pipeline.run.report import ReportFold
from soev_pipeline.run.results import Folded, GradedAttempt
from soev_pipeline.run.service import grade
from tests.support.builders import ScriptedJudge, label

HOOKS = """
import os

from soev_pipeline.criteria import Builtin, NoParams, outcome


async def where(case, evidence, *, params, ctx):
    return outcome(passed=True, detail=f"pid {os.getpid()}")


CRITERIA = [Builtin("proef.where", NoParams, where)]
"""
UNITS = [
    {
        "id": f"BWBR0005537/artikel-6:{n}",
        "text": f"De termijn voor het indienen van een bezwaarschrift bedraagt {n} weken.",
        "law": "Algemene wet bestuursrecht",
        "aliases": ["Awb"],
        "article": f"6:{n}",
    }
    for n in range(1, 9)
]
SHARED = [
    {"kind": "run.no_failure", "gate": True},
    {"kind": "reply.language", "language": "nl", "min_share": 0.5},
    {"kind": "privacy.none"},
    {"kind": "citations.in_corpus"},
    {"kind": "citations.quotes_verbatim"},
    {"kind": "citations.mentions_in_corpus"},
    {"kind": "reply.contains", "substrings": ["termijn"]},
]
CASES = [
    {"id": "kern-001", "input": "Hoe lang is de bezwaartermijn?"},
    {"id": "kern-002", "input": "Wat zegt artikel 6:7?", "criteria": [{"kind": "proef.where"}]},
    {"id": "kern-003", "input": "Mag ik later?", "criteria": [{"kind": "behaviour.expected"}]},
    {"id": "kern-t01", "split": "test", "input": "Geheim?"},
]
REPLIES = [
    'De termijn is zes weken: "bedraagt 6 weken" (artikel 6:7 Awb).',
    "Volgens artikel 6:99 Awb geldt een termijn. Mail jan@example.nl.",
    "The deadline is six weeks.",
    '"Een verzonnen citaat" staat in art. 6:3 Awb, de termijn.',
]


def _project(folder: Path) -> LoadedProject:
    (folder / "suites").mkdir(parents=True)
    (folder / "hooks.py").write_text(HOOKS, encoding="utf-8")
    corpus = "".join(json.dumps(unit) + "\n" for unit in UNITS)
    (folder / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    suite = {"suite": "kern", "criteria": SHARED, "cases": CASES}
    (folder / "suites" / "kern.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    project = {
        "name": "proef",
        "system": {"base_url": "http://127.0.0.1:9/", "agent": "wetwijzer"},
        "suites": [{"name": "kern", "files": "suites/*.yaml"}],
        "hooks": "hooks",
        "corpus": "corpus.jsonl",
    }
    (folder / "project.yaml").write_text(yaml.safe_dump(project), encoding="utf-8")
    return load(folder / "project.yaml")


def _evidence(count: int) -> list[Evidence]:
    """`count` attempts over the cases, each case's attempts numbered from 0, and one
    attempt twice: the second must not count."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    made = []
    for n in range(count):
        case = CASES[n % len(CASES)]
        reply = None if n % 11 == 5 else REPLIES[n % len(REPLIES)]
        cited = (UNITS[n % len(UNITS)]["id"], "BWBR9999999/artikel-1")[: 1 + n % 2]
        turn = Turn(
            input=str(case["input"]),
            reply=reply,
            citations=cited if reply else (),
            usage=Usage(prompt_tokens=100 + n, completion_tokens=n),
            duration_s=n / 7,
            failure=None if reply else {"code": "timeout"},  # type: ignore[arg-type]
        )
        made.append(
            Evidence(
                case_id=str(case["id"]),
                suite="kern",
                split="test" if case.get("split") == "test" else "dev",
                attempt=n // len(CASES),
                turns=(turn,),
                reply=reply,
                citations=turn.citations,
                started_at=start + timedelta(seconds=n),
                finished_at=start + timedelta(seconds=n + 1),
            )
        )
    return [*made, made[3], made[0].model_copy(update={"case_id": "gone-001"})]


def _grade(
    loaded: LoadedProject, evidence: list[Evidence], scoring: Path, workers: int, **options: Any
) -> GradingSummary:
    scoring.mkdir(parents=True)
    ctx = CriterionContext(
        messages=loaded.context.messages,
        corpus=loaded.context.corpus,
        judge=ScriptedJudge(label("answer", "past")),
        language_detector=LangidDetector(),
    )
    return asyncio.run(
        grade_evidence(
            loaded, ctx, evidence, scoring, total=len(evidence), workers=workers, **options
        )
    )


@pytest.fixture
def loaded(tmp_path: Path) -> LoadedProject:
    return _project(tmp_path / "project")


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of attempts of each chunk sent to a worker."""
    sizes: list[int] = []
    submit = WorkerPool.submit

    def counted(self: WorkerPool[Any, Any], task: Any) -> Any:
        sizes.append(len(task))
        return submit(self, task)

    monkeypatch.setattr(WorkerPool, "submit", counted)
    return sizes


def test_workers_write_the_bytes_of_one_process(
    loaded: LoadedProject, tmp_path: Path, submitted: list[int]
) -> None:
    evidence = _evidence(120)
    alone = _grade(loaded, evidence, tmp_path / "alone", workers=1)
    assert submitted == []
    pooled = _grade(loaded, evidence, tmp_path / "pooled", workers=2)
    assert sum(submitted) == 120 - grading_module.WARM_UP - grading_module.PROBE
    first = (tmp_path / "alone" / VERDICTS).read_bytes()
    assert (tmp_path / "pooled" / VERDICTS).read_bytes() == first
    ignored = {"scoring", "created_at"}
    assert pooled.model_dump(exclude=ignored) == alone.model_dump(exclude=ignored)
    assert (alone.attempts, alone.skipped) == (120, 1)
    lines = [json.loads(line) for line in first.decode().splitlines()]
    assert [(line["case_id"], line["attempt"]) for line in lines] == [
        (e.case_id, e.attempt) for e in evidence[:120]
    ]
    statuses = {v["status"] for line in lines for v in line["verdicts"]}
    assert statuses == {"pass", "fail", "error", "not_applicable"}
    here = [v for line in lines for v in line["verdicts"] if v["kind"] == "proef.where"]
    assert here and {v["detail"] for v in here} == {f"pid {os.getpid()}"}
    judged = [v for line in lines for v in line["verdicts"] if v["kind"] == "behaviour.expected"]
    assert "judge-m" in {v["judge_model"] for v in judged}


def test_a_small_grading_stays_in_this_process(
    loaded: LoadedProject, tmp_path: Path, submitted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOEV_GRADE_WORKERS", raising=False)
    _grade(loaded, _evidence(60), tmp_path / "small", workers=None)
    assert submitted == []


def _in_a_worker(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    """Make every chunk that a worker process grades call `act` first."""
    parent = os.getpid()
    grade = grading_module._ChunkGrader.grade

    def acting(self: Any, chunk: Any) -> Coroutine[Any, Any, Any]:
        if os.getpid() != parent:
            act()
        return grade(self, chunk)

    monkeypatch.setattr(grading_module._ChunkGrader, "grade", acting)


def _hold(held: Path) -> None:
    """Hold a chunk for a minute, then leave `held`: only a worker that was waited for, not
    killed, gets that far."""
    time.sleep(60)
    held.touch()


def test_a_worker_that_dies_stops_the_grading_with_one_error(
    loaded: LoadedProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    died, held = tmp_path / "died", tmp_path / "held"

    def die_or_hold() -> None:
        """The first worker to grade a chunk dies; any other holds its chunk."""
        try:
            died.touch(exist_ok=False)
        except FileExistsError:
            _hold(held)
        else:
            os.kill(os.getpid(), signal.SIGKILL)

    _in_a_worker(monkeypatch, die_or_hold)
    with pytest.raises(GradingWorkerError, match=r"ended unexpectedly \(killed, or out of memory"):
        _grade(loaded, _evidence(120), tmp_path / "killed", workers=2)
    assert multiprocessing.active_children() == []
    assert not held.exists()


async def _die(task: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return task


def test_a_task_sent_after_a_worker_died_fails_with_the_same_error() -> None:
    async def send_twice() -> None:
        pool: WorkerPool[int, int] = WorkerPool(_die, 1)
        try:
            with pytest.raises(GradingWorkerError, match="ended unexpectedly"):
                await pool.submit(1)
            with pytest.raises(GradingWorkerError, match="ended unexpectedly"):
                await pool.submit(2)  # the pool is broken already
        finally:
            pool.close()

    asyncio.run(send_twice())
    assert multiprocessing.active_children() == []


def test_a_worker_that_fails_names_the_exception(
    loaded: LoadedProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail() -> None:
        raise RuntimeError("no room")

    _in_a_worker(monkeypatch, fail)
    with pytest.raises(GradingWorkerError, match=r"a grading worker failed: RuntimeError: no room"):
        _grade(loaded, _evidence(120), tmp_path / "failed", workers=2)
    assert multiprocessing.active_children() == []


def test_a_cancelled_grading_ends_its_workers(
    loaded: LoadedProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, submitted: list[int]
) -> None:
    held = tmp_path / "held"
    _in_a_worker(monkeypatch, lambda: _hold(held))
    scoring = tmp_path / "cancelled"
    scoring.mkdir()
    ctx = CriterionContext(corpus=loaded.context.corpus, language_detector=LangidDetector())

    async def cancel_once_sent() -> None:
        grading = asyncio.ensure_future(
            grade_evidence(loaded, ctx, _evidence(120), scoring, total=120, workers=2)
        )
        while not submitted:
            await asyncio.sleep(0.01)
        grading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await grading

    asyncio.run(cancel_once_sent())
    assert multiprocessing.active_children() == []
    assert not held.exists()


def test_a_cancelled_grading_in_one_process_stops_within_a_chunk(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    scoring = tmp_path / "cancelled"
    scoring.mkdir()
    ctx = CriterionContext(corpus=loaded.context.corpus, language_detector=LangidDetector())
    written: list[int] = []
    pure = [item for item in _evidence(8000) if item.case_id in ("kern-001", "kern-t01")]

    async def cancel_once_written() -> None:
        grading = asyncio.ensure_future(
            grade_evidence(
                loaded,
                ctx,
                pure,
                scoring,
                workers=1,
                progress=lambda n, _: written.append(n),
            )
        )
        while not written:
            await asyncio.sleep(0)
        grading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await grading

    asyncio.run(cancel_once_written())
    assert written[-1] < len(pure) / 4


@pytest.mark.parametrize(
    ("value", "workers"), [(None, None), ("", None), ("auto", None), ("1", 1), (" 3 ", 3)]
)
def test_the_workers_setting(
    monkeypatch: pytest.MonkeyPatch, value: str | None, workers: int | None
) -> None:
    if value is None:
        monkeypatch.delenv("SOEV_GRADE_WORKERS", raising=False)
    else:
        monkeypatch.setenv("SOEV_GRADE_WORKERS", value)
    assert workers_setting() == workers


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_workers_setting_is_refused(value: str) -> None:
    with pytest.raises(ProjectError, match=r"SOEV_GRADE_WORKERS=.*1 to 64"):
        workers_setting(value)


def test_a_rescore_lets_go_of_the_corpus_indexes_and_grades_the_same_again(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    archive = RunArchive(tmp_path / "runs", "r1")
    evidence = _evidence(30)[:30]
    manifest = build_manifest(
        run_id="r1",
        project=loaded.project.name,
        suites=["kern"],
        split=None,
        k=max(e.attempt for e in evidence) + 1,
        cases=list(loaded.cases()),
        shas=loaded.prompt_shas,
    )
    archive.create(manifest)
    with archive.evidence_writer() as writer:
        for attempt in evidence:
            writer.append(attempt)
    corpus = loaded.context.corpus
    assert isinstance(corpus, CorpusLookup)
    scorings = []
    for _ in range(2):
        corpus.warm()
        scoring = asyncio.run(grade(loaded, archive, judge=None, offline=True))
        assert corpus._cache == {}  # the indexes went with the grading
        scorings.append((scoring.path / VERDICTS).read_bytes())
    assert scorings[0] == scorings[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_carries_what_the_report_keeps_unless_a_secret_was_redacted(
    loaded: LoadedProject, tmp_path: Path, workers: int
) -> None:
    """Each line is given to `written` as written: a `GradedLine`, from this process or a
    worker, that carries what the report keeps of the attempt the line reads as (the
    report's fold takes it without reading the line). A line that a secret was redacted
    from is plain text: what it carried still held the secret."""
    written: list[str] = []
    register_secret("termijn")
    try:
        _grade(loaded, _evidence(120), tmp_path / "s", workers=workers, written=written.append)
    finally:
        forget_secrets()
    assert "\n".join(written) + "\n" == (tmp_path / "s" / VERDICTS).read_text()
    carried = [line for line in written if isinstance(line, GradedLine)]
    redacted = [line for line in written if "[redacted]" in line]
    assert redacted and not any(isinstance(line, GradedLine) for line in redacted)
    assert "termijn" not in "".join(written)
    assert len(carried) == len(written) - len(redacted)
    for line in carried:
        assert line.folded == Folded.of(GradedAttempt.model_validate_json(line))
    assert pickle.loads(pickle.dumps(carried[0])).folded == carried[0].folded
    folded, read = ReportFold(), ReportFold()
    for line in written:
        folded.add_line(line)
        read.add_line(str(line))
    assert folded._rows == read._rows and folded._criteria == read._criteria
