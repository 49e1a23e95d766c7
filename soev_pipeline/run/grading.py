"""Grade archived evidence with the project's current criteria, streaming to a scoring folder.

The criteria of an attempt are graded in two places. The kinds that need no judge
(`registry.forkable`) are graded a chunk of attempts at a time: in this process when the work is
small, in worker processes (`pool`) when it is big enough to pay for them. The others, the
judge's kinds and those of unknown needs, run on this process's event loop, attempts concurrently,
as HTTP requests want. The lines of verdicts.jsonl come out in the order of the evidence
either way, the same bytes with or without workers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import STATUSES, Case, Evidence, Status, Verdict
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.core.secrets import redact
from soev_pipeline.criteria import BoundCriterion, CriterionRegistry
from soev_pipeline.judges import LangidDetector
from soev_pipeline.judges.language import LazyLangidDetector
from soev_pipeline.project import LoadedProject

from .archive import SCORING, VERDICTS, naming, write_json_atomically
from .pool import WorkerPool, auto_workers, workers_setting
from .results import Folded, GradedAttempt, GradingSummary
from .scoring import score_attempt

Progress = Callable[[int, int], None]

WARM_UP = 4
"""Attempts graded here first, untimed: they build what is made on first use (the language
model), so that workers share it instead of each building its own."""
PROBE = 16
"""Attempts graded here next, timed: the cost of an attempt, to decide on workers."""
POOL_MIN_S = 0.5
"""Below this estimated grading time in one process, workers do not pay for themselves.
Measured on 2 cores (`bench/grade.py --crossover`): two workers break even at about 0.3 s
of work, and take 0.55 s for what one process grades in 0.84 s."""
CHUNK_S = 0.1
"""About how long one chunk of attempts takes to grade: long enough that sending it to a
worker costs little, short enough to keep the workers evenly busy."""
MAX_CHUNK = 256


async def grade_attempt(
    loaded: LoadedProject, case: Case, evidence: Evidence, ctx: CriterionContext
) -> GradedAttempt:
    """Grade one attempt with every criterion of its case, concurrently."""
    registry = loaded.registry
    verdicts = await asyncio.gather(
        *(
            registry.evaluate(spec, case, evidence, ctx, params=loaded.params.get((case.id, index)))
            for index, spec in enumerate(case.criteria)
        )
    )
    return _graded(loaded, case, evidence, verdicts)


def _graded(
    loaded: LoadedProject, case: Case, evidence: Evidence, verdicts: Sequence[Verdict]
) -> GradedAttempt:
    score = score_attempt(verdicts, loaded.project.scoring.pass_threshold)
    return GradedAttempt(
        case_id=case.id,
        suite=case.suite,
        split=case.split,
        attempt=evidence.attempt,
        score=score.score,
        passed=score.passed,
        verdicts=tuple(verdicts),
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """A case, its criteria bound once for the grading, and which of them (by position)
    are graded in chunks, which here."""

    case: Case
    bound: tuple[BoundCriterion, ...]
    chunked: tuple[int, ...]
    here: tuple[int, ...]


def _pure_kinds(registry: CriterionRegistry, ctx: CriterionContext) -> frozenset[str]:
    """The kinds that may be graded in a worker: those needing the language detector only
    with the bundled one, since a runtime's own may hold what a fork must not share."""
    detector = ctx.language_detector
    bundled = detector is None or isinstance(detector, LangidDetector | LazyLangidDetector)
    return registry.forkable(detector_forks=bundled)


def _plan(loaded: LoadedProject, case: Case, pure: frozenset[str]) -> _Plan:
    bound = tuple(
        loaded.registry.bind(spec, loaded.params.get((case.id, index)))
        for index, spec in enumerate(case.criteria)
    )
    chunked = tuple(index for index, spec in enumerate(case.criteria) if spec.kind in pure)
    here = tuple(index for index in range(len(case.criteria)) if index not in chunked)
    return _Plan(case, bound, chunked, here)


class GradedLine(str):
    """A line of `verdicts.jsonl` that carries what the report keeps of its attempt.

    Grading hands it to `written` as it is written, so that the report's fold
    (`report.ReportFold.add_line`) takes `folded` instead of reading the line back into
    models, which cost as much as grading a few cheap criteria. A worker process sends its
    lines back as these too (`Folded` is plain tuples, quick to pickle).
    """

    folded: Folded

    def __new__(cls, line: str, folded: Folded) -> GradedLine:
        made = super().__new__(cls, line)
        made.folded = folded
        return made

    @classmethod
    def of(cls, attempt: GradedAttempt) -> GradedLine:
        """The line of `attempt`."""
        return cls(attempt.model_dump_json(), Folded.of(attempt))

    def __reduce__(self) -> tuple[type[GradedLine], tuple[str, Folded]]:
        return GradedLine, (str(self), self.folded)


Graded = str | tuple[Verdict, ...]
"""What a chunk gives for an attempt: its finished verdicts line, or, when the case also
has criteria graded here, the verdicts of its chunked criteria."""
ChunkResult = tuple[list[Graded], dict[Status, int]]
"""The attempts of a chunk, and the verdict statuses of the finished lines."""


class _ChunkGrader:
    """Grades the chunked criteria of a chunk of attempts: here, or in a worker process.

    A chunk sent to a worker holds evidence as JSON text, which is cheaper to send and read
    than pickled models. The kinds that share work between attempts do it for the whole
    chunk first (`CriterionRegistry.prepare`: the language of every reply's sentences).
    """

    def __init__(self, loaded: LoadedProject, ctx: CriterionContext, plans: dict[str, _Plan]):
        self._loaded = loaded
        self._ctx = ctx
        self._plans = plans

    async def grade(self, chunk: Sequence[Evidence | str]) -> ChunkResult:
        ctx = self._ctx
        graded: list[Graded] = []
        statuses: dict[Status, int] = dict.fromkeys(STATUSES, 0)
        attempts = [
            item if isinstance(item, Evidence) else Evidence.model_validate_json(item)
            for item in chunk
        ]
        plans = [self._plans[evidence.case_id] for evidence in attempts]
        chunked = (
            (plan.case.criteria[index], evidence)
            for evidence, plan in zip(attempts, plans, strict=True)
            for index in plan.chunked
        )
        self._loaded.registry.prepare(chunked, ctx)
        for evidence, plan in zip(attempts, plans, strict=True):
            case = plan.case
            verdicts = [
                await plan.bound[index].evaluate(case, evidence, ctx) for index in plan.chunked
            ]
            if plan.here:
                graded.append(tuple(verdicts))
                continue
            graded.append(GradedLine.of(_graded(self._loaded, case, evidence, verdicts)))
            for verdict in verdicts:
                statuses[verdict.status] += 1
        return graded, statuses


@dataclass
class _Chunk:
    attempts: list[tuple[_Plan, Evidence]]
    here: list[asyncio.Task[list[Verdict]] | None]
    result: asyncio.Future[ChunkResult]


class _Grading:
    """One grading: reads the attempts in chunks, grades them, writes their lines in order."""

    def __init__(
        self,
        loaded: LoadedProject,
        ctx: CriterionContext,
        out: IO[str],
        *,
        total: int,
        concurrency: int,
        workers: int | None,
        progress: Progress | None,
        max_chunk: int = MAX_CHUNK,
        written: Callable[[str], object] | None = None,
    ) -> None:
        self.loaded = loaded
        self.ctx = ctx
        pure = _pure_kinds(loaded.registry, ctx)
        self.plans = {case.id: _plan(loaded, case, pure) for case in loaded.cases()}
        self.grader = _ChunkGrader(loaded, replace(ctx, judge=None), self.plans)
        self.out = out
        self.total = total
        self.concurrency = max(1, concurrency)
        self.limit = asyncio.Semaphore(self.concurrency)
        self.workers = workers
        self.progress = progress
        self.written = written
        self.max_chunk = max(1, max_chunk)
        self.pool: WorkerPool[Sequence[Evidence | str], ChunkResult] | None = None
        self.statuses: dict[Status, int] = dict.fromkeys(STATUSES, 0)
        self.tasks: set[asyncio.Task[list[Verdict]]] = set()
        self.read = self.done = self.skipped = 0

    def attempts(self, evidence: Iterable[Evidence]) -> Iterator[tuple[_Plan, Evidence]]:
        """The attempts to grade: the first of each (case, attempt), of a case we have."""
        seen: set[tuple[str, int]] = set()
        for item in evidence:
            plan = self._keep(item, seen)
            if plan is not None:
                yield plan, item

    async def streamed(
        self, evidence: AsyncIterable[Evidence]
    ) -> AsyncIterator[tuple[_Plan, Evidence]]:
        """`attempts` of evidence that arrives while it is graded."""
        seen: set[tuple[str, int]] = set()
        async for item in evidence:
            plan = self._keep(item, seen)
            if plan is not None:
                yield plan, item

    def _keep(self, item: Evidence, seen: set[tuple[str, int]]) -> _Plan | None:
        key = (item.case_id, item.attempt)
        if key in seen:
            return None
        seen.add(key)
        plan = self.plans.get(item.case_id)
        if plan is None:
            self.skipped += 1
            return None
        self.read += 1
        return plan

    def _taker(
        self, evidence: Iterable[Evidence] | AsyncIterable[Evidence]
    ) -> Callable[[int], Awaitable[list[tuple[_Plan, Evidence]]]]:
        """How the next batch of at most `size` attempts is read: at once from an iterable;
        from a stream, as its attempts arrive, at most `max_chunk` of them, so that little is
        left to grade when the stream ends."""
        if isinstance(evidence, AsyncIterable):
            arriving = self.streamed(evidence)

            async def wait(size: int) -> list[tuple[_Plan, Evidence]]:
                batch: list[tuple[_Plan, Evidence]] = []
                async for pair in arriving:
                    batch.append(pair)
                    if len(batch) >= min(size, self.max_chunk):
                        break
                return batch

            return wait
        attempts = self.attempts(evidence)

        async def take(size: int) -> list[tuple[_Plan, Evidence]]:
            return list(islice(attempts, size))

        return take

    async def run(self, evidence: Iterable[Evidence] | AsyncIterable[Evidence]) -> None:
        take = self._taker(evidence)
        window: deque[_Chunk] = deque()
        size, ahead, queued, number = WARM_UP, self.concurrency, 0, 0
        try:
            while batch := await take(size):
                number += 1
                here = [self._here(plan, item) if plan.here else None for plan, item in batch]
                if self.pool is not None:
                    result = self.pool.submit([item.model_dump_json() for _, item in batch])
                else:
                    began = time.perf_counter()
                    graded = await self.grader.grade([item for _, item in batch])
                    seconds = time.perf_counter() - began
                    result = asyncio.get_running_loop().create_future()
                    result.set_result(graded)
                    await asyncio.sleep(0)  # the chunk never let the loop run: Ctrl-C, requests
                    if number == 1:
                        size = PROBE
                    elif number == 2:
                        size, ahead = self._decide(seconds / len(batch))
                window.append(_Chunk(batch, here, result))
                queued += len(batch)
                while queued >= ahead:
                    queued -= await self._write(window.popleft())
            while window:
                await self._write(window.popleft())
        finally:
            if self.pool is not None:
                self.pool.close()
            for chunk in window:
                if not chunk.result.cancel() and not chunk.result.cancelled():
                    chunk.result.exception()  # the pool's error, raised already: retrieved
            unfinished = list(self.tasks)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)

    def _decide(self, per_attempt: float) -> tuple[int, int]:
        """Start workers when they pay; return the chunk size and how many attempts to
        read ahead of the one being written."""
        size = min(self.max_chunk, max(1, round(CHUNK_S / max(per_attempt, 1e-9))))
        count = self.workers
        if count is None:
            remaining = max(0, self.total - self.read)
            pays = per_attempt * remaining >= POOL_MIN_S
            count = auto_workers() if pays else 1
        if count < 2:
            return size, self.concurrency
        self.out.flush()  # a fork copies unwritten buffers; none of them must be written twice
        self.pool = WorkerPool(self.grader.grade, count)
        return size, max(self.concurrency, 3 * count * size)

    def _here(self, plan: _Plan, evidence: Evidence) -> asyncio.Task[list[Verdict]]:
        async def grade() -> list[Verdict]:
            case = plan.case
            async with self.limit:
                return await asyncio.gather(
                    *(plan.bound[index].evaluate(case, evidence, self.ctx) for index in plan.here)
                )

        task = asyncio.ensure_future(grade())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _write(self, chunk: _Chunk) -> int:
        graded, statuses = await chunk.result
        for status, count in statuses.items():
            self.statuses[status] += count
        for (plan, evidence), here, item in zip(chunk.attempts, chunk.here, graded, strict=True):
            if isinstance(item, str):
                line = item
            else:
                assert here is not None
                by_index = dict(zip(plan.chunked, item, strict=True))
                by_index.update(zip(plan.here, await here, strict=True))
                verdicts = [by_index[index] for index in range(len(plan.case.criteria))]
                line = GradedLine.of(_graded(self.loaded, plan.case, evidence, verdicts))
                for verdict in verdicts:
                    self.statuses[verdict.status] += 1
            redacted = redact(str(line))
            if redacted != line:  # a secret in it: what the line carried holds the secret
                line = redacted
            self.out.write(line + "\n")
            if self.written is not None:
                self.written(line)
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)
        return len(chunk.attempts)


async def grade_evidence(
    loaded: LoadedProject,
    ctx: CriterionContext,
    evidence: Iterable[Evidence] | AsyncIterable[Evidence],
    scoring_dir: Path,
    *,
    total: int = 0,
    concurrency: int = 32,
    prompts: dict[str, str] | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    max_chunk: int = MAX_CHUNK,
    written: Callable[[str], object] | None = None,
) -> GradingSummary:
    """Grade `evidence` into `scoring_dir/verdicts.jsonl`, a line per attempt, in order.

    `evidence` is read at once when it is an iterable (an archive's attempts), or as it
    arrives when it is an async iterable (a run's attempts as they are archived): then
    chunks hold at most `max_chunk` attempts, are graded as soon as they are full, and the
    grading ends when the stream does. The lines are the same bytes either way.

    Evidence of a case the project no longer has is skipped and counted; of an attempt
    that appears twice, the first counts. `total` is the number of evidence lines (for
    progress, and to judge whether workers pay). At most `concurrency` attempts are graded
    at once by the criteria that run here; each attempt's criteria run concurrently.
    `workers` is the number of grading processes: None decides from the work and the cores
    (or `SOEV_GRADE_WORKERS`), 1 grades here alone, more always starts a pool.
    `written` is given each line as it is written (without its newline): the report is
    folded from them (`report.ReportFold`).

    Raises:
        ProjectError: `SOEV_GRADE_WORKERS` is not a valid number.
        GradingWorkerError: a worker process died or failed.
    """
    if workers is None:
        workers = workers_setting()
    created_at = datetime.now(UTC).isoformat()
    path = scoring_dir / VERDICTS
    with naming(path), path.open("w", encoding="utf-8") as out:
        grading = _Grading(
            loaded,
            ctx,
            out,
            total=total,
            concurrency=concurrency,
            workers=workers,
            progress=progress,
            max_chunk=max_chunk,
            written=written,
        )
        await grading.run(evidence)
    kinds = {spec.kind for plan in grading.plans.values() for spec in plan.case.criteria}
    summary = GradingSummary(
        scoring=scoring_dir.name,
        created_at=created_at,
        attempts=grading.done,
        skipped=grading.skipped,
        statuses=grading.statuses,
        criterion_versions={kind: loaded.registry.version(kind) for kind in sorted(kinds)},
        prompts=dict(prompts or {}),
        offline=offline,
        judge=None,
    )
    write_json_atomically(scoring_dir / SCORING, summary.model_dump(mode="json"))
    return summary


def iter_graded(scoring_dir: Path) -> Iterator[GradedAttempt]:
    """Read `verdicts.jsonl` of a scoring a line at a time.

    Raises:
        ProjectError: a line is not a graded attempt.
    """
    path = scoring_dir / VERDICTS
    with naming(path), path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                graded = GradedAttempt.model_validate_json(line)
            except ValidationError:
                raise ProjectError(
                    f"{path}: line {number}: not a graded attempt; "
                    f"`soev-evals rescore {path.parents[2].name}` grades the run anew"
                ) from None
            yield graded
