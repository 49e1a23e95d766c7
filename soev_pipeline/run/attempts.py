"""Run the attempts of a run against the system under test, archiving each as it finishes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import JsonValue

from soev_pipeline.core.messages import refusal_code
from soev_pipeline.core.models import Case, Evidence, Failure, Split, Turn
from soev_pipeline.core.ports import Arm, CaseSetup
from soev_pipeline.core.secrets import redact
from soev_pipeline.text import shorten

from .archive import EvidenceWriter

Progress = Callable[[int, int, int], None]

_MAX_DETAIL = 300
"""The longest failure detail, as long as the arms' own."""


def select_cases(
    cases: Iterable[Case], *, suites: Sequence[str] = (), split: Split | None = None
) -> list[Case]:
    """The cases of the selected suites (all when empty) and split (both when None)."""
    return [
        case
        for case in cases
        if (not suites or case.suite in suites) and (split is None or case.split == split)
    ]


def plan_attempts(
    cases: Sequence[Case], k: int, done: set[tuple[str, int]] | None = None
) -> list[tuple[Case, int]]:
    """Every (case, attempt) pair not in `done`: attempt 0 of every case first, then 1, ..."""
    done = done or set()
    return [
        (case, attempt) for attempt in range(k) for case in cases if (case.id, attempt) not in done
    ]


@dataclass
class AttemptStats:
    """Counts of an attempt phase."""

    planned: int = 0
    finished: int = 0
    failed: int = 0


def _harness_failure(case: Case, attempt: int, started: datetime, exc: BaseException) -> Evidence:
    """Evidence for an attempt whose arm raised instead of recording the failure."""
    detail = shorten(redact(f"{type(exc).__name__}: {exc}"), _MAX_DETAIL)  # redact, then cut
    return Evidence(
        case_id=case.id,
        suite=case.suite,
        split=case.split,
        attempt=attempt,
        turns=(Turn(input=case.turns[0], failure=Failure(code="arm_error", detail=detail)),),
        started_at=started,
        finished_at=datetime.now(UTC),
    )


async def run_attempts(
    plan: Sequence[tuple[Case, int]],
    arm: Arm,
    writer: EvidenceWriter,
    *,
    messages: Mapping[str, str],
    concurrency: int,
    setup: CaseSetup | None = None,
    progress: Progress | None = None,
) -> AttemptStats:
    """Run the planned attempts, at most `concurrency` at a time, appending each to `writer`.

    No attempt waits for another: `concurrency` workers take the next pair as soon as they
    are free. When the task is cancelled (Ctrl-C), every attempt that finished is already
    archived; the ones in flight are lost and run again on `--resume`.
    """
    stats = AttemptStats(planned=len(plan))
    pending: Iterator[tuple[Case, int]] = iter(plan)

    async def one(case: Case, attempt: int) -> Evidence:
        started = datetime.now(UTC)
        fixture: AbstractAsyncContextManager[Mapping[str, JsonValue]] = (
            setup(case) if setup is not None else nullcontext({})
        )
        try:
            async with fixture as fields:
                evidence = await arm.attempt(case, attempt=attempt, fields=dict(fields or {}))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the arm records failures; this is a bug or a bad fixture
            return _harness_failure(case, attempt, started, exc)
        code = evidence.refusal_code or refusal_code(evidence.reply, messages)
        return evidence.model_copy(update={"refusal_code": code})

    async def worker() -> None:
        for case, attempt in pending:
            evidence = await one(case, attempt)
            writer.append(evidence)
            stats.finished += 1
            if evidence.failure is not None:
                stats.failed += 1
            if progress is not None:
                progress(stats.finished, stats.planned, stats.failed)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, len(plan)))):
            group.create_task(worker())
    return stats
