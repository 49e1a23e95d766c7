"""Run the attempts of a run against the system under test, archiving each as it finishes.

Two edges of a run are decided here (docs/runs.md#a-run-that-cannot-reach-the-assistant):
the first attempts of a run that all fail the same way before any reply stop it
(`FirstAttempts`), and the attempts that did not run are planned once more after the
others (`plan_retries`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import JsonValue

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.messages import refusal_code
from soev_pipeline.core.models import Case, Evidence, Failure, Split, Turn
from soev_pipeline.core.ports import Arm, CaseSetup
from soev_pipeline.core.secrets import redact
from soev_pipeline.text import shorten

from .store import EvidenceSink
from .unrun import CONNECT_ERROR, infrastructure

Progress = Callable[[int, int, int], None]

_MAX_DETAIL = 300
"""The longest failure detail, as long as the arms' own."""
FIRST_ATTEMPTS = 20
"""How many of a run's first attempts, failing the same way before any reply, stop it (or
all of them, when it plans fewer)."""


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


def plan_retries(
    cases: Sequence[Case], k: int, unrun: Iterable[tuple[str, int]]
) -> list[tuple[Case, int]]:
    """The attempts of `unrun` (case id, attempt) to run once more, in the order of
    `plan_attempts`; those of cases not among `cases` are left out."""
    again = set(unrun)
    return [
        (case, attempt) for attempt in range(k) for case in cases if (case.id, attempt) in again
    ]


@dataclass
class AttemptStats:
    """Counts of an attempt phase: the attempts planned, run and failed; `finished` and
    `failed` count those run once more too, `retried` how many were."""

    planned: int = 0
    finished: int = 0
    failed: int = 0
    retried: int = 0


def failed_before_reply(evidence: Evidence) -> str | None:
    """How an attempt failed before any reply, when that may be the run's own fault: the
    HTTP status (`HTTP 404`) when it is not 429 or 5xx, or `connect_error`. None when a
    turn got a reply, when no turn failed, or when it failed otherwise (a timeout, a 503,
    a `failure` event)."""
    if any(turn.reply is not None for turn in evidence.all_turns()):
        return None
    failure = evidence.failure
    if failure is None:
        return None
    if failure.http_status is not None:
        return None if infrastructure(failure) else f"HTTP {failure.http_status}"
    return CONNECT_ERROR if failure.code == CONNECT_ERROR else None


class FirstAttemptsFailed(Exception):
    """The first `attempts` attempts of a run all failed with `reason` before any reply;
    `detail` is what the first of them said."""

    def __init__(self, reason: str, attempts: int, detail: str) -> None:
        super().__init__(f"the first {attempts} attempts all failed with {reason}")
        self.reason, self.attempts, self.detail = reason, attempts, detail


class FirstAttempts:
    """Watches the first `window` attempts of a run to finish, and stops the run when they
    all fail the same way before any reply (`failed_before_reply`).

    While they might, their evidence is held back rather than archived: a run stopped for
    a wrong route must not keep twenty 404s that a resume would then count as the
    assistant's failures. The first attempt that ends otherwise lets the held ones through,
    and from then on every attempt goes straight to the archive.
    """

    def __init__(self, window: int) -> None:
        self.window = window
        self.held: list[Evidence] = []
        self.reason: str | None = None
        self.settled = window <= 0

    def take(self, evidence: Evidence) -> list[Evidence]:
        """The evidence to archive now, `evidence` included or held back.

        Raises:
            FirstAttemptsFailed: `evidence` is the `window`-th attempt to fail the same way.
        """
        if self.settled:
            return [evidence]
        reason = failed_before_reply(evidence)
        if reason is None or (self.held and reason != self.reason):
            self.settled = True
            released, self.held = [*self.held, evidence], []
            return released
        self.reason = reason
        self.held.append(evidence)
        if len(self.held) >= self.window:
            failure = self.held[0].failure
            raise FirstAttemptsFailed(reason, len(self.held), failure.detail if failure else "")
        return []


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
    writer: EvidenceSink,
    *,
    messages: Mapping[str, str],
    concurrency: int,
    setup: CaseSetup | None = None,
    progress: Progress | None = None,
    first: int = 0,
    archived: Callable[[str], None] | None = None,
) -> AttemptStats:
    """Run the planned attempts, at most `concurrency` at a time, appending each to `writer`.

    An attempt is reported (`archived`, the stats, `progress`) only once `writer` says it
    is archived; every finished attempt is, when this returns or raises. `archived`, when
    given, gets the line of each attempt as the archive holds it (to grade it while the
    others run).

    No attempt waits for another: `concurrency` workers take the next pair as soon as they
    are free. When the task is cancelled (Ctrl-C), every attempt that finished is already
    archived; the ones in flight are lost and run again on `--resume`.

    With `first`, the first min(`first`, planned) attempts to finish are watched
    (`FirstAttempts`): when they all fail the same way before any reply, the attempts in
    flight are cancelled, none of the watched ones is archived, and this raises.

    Raises:
        FirstAttemptsFailed: the watched attempts all failed the same way.
    """
    stats = AttemptStats(planned=len(plan))
    pending: Iterator[tuple[Case, int]] = iter(plan)
    watch = FirstAttempts(min(first, len(plan)))

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

    def archive(evidence: Evidence) -> None:
        failed = evidence.failure is not None

        def reported(line: str) -> None:  # once the archive holds it, not before
            if archived is not None:
                archived(line)
            stats.finished += 1
            stats.failed += failed
            if progress is not None:
                progress(stats.finished, stats.planned, stats.failed)

        writer.append(evidence, reported)

    async def worker() -> None:
        for case, attempt in pending:
            writer.check()  # the run is still this command's (its lease, on object storage)
            for evidence in watch.take(await one(case, attempt)):
                archive(evidence)

    try:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, min(concurrency, len(plan)))):
                    group.create_task(worker())
        except* FirstAttemptsFailed as stopped:
            raise stopped.exceptions[0] from None
        except* ProjectError as refused:  # the archive refused an attempt, or the run was lost
            raise refused.exceptions[0] from None
    except (asyncio.CancelledError, KeyboardInterrupt):
        for evidence in watch.held:  # interrupted while watching: they finished, keep them
            archive(evidence)
        writer.flush()
        raise
    writer.flush()
    return stats
