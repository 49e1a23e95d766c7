"""Grade archived evidence with the project's current criteria, streaming to a scoring folder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from soev_pipeline.core.models import STATUSES, Case, Evidence, Status
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.core.secrets import redact
from soev_pipeline.project import LoadedProject

from .archive import SCORING, VERDICTS, naming, write_json_atomically
from .results import GradedAttempt, GradingSummary
from .scoring import score_attempt

Progress = Callable[[int, int], None]


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


def _unique(evidence: Iterable[Evidence]) -> Iterator[Evidence]:
    seen: set[tuple[str, int]] = set()
    for item in evidence:
        key = (item.case_id, item.attempt)
        if key not in seen:
            seen.add(key)
            yield item


async def grade_evidence(
    loaded: LoadedProject,
    ctx: CriterionContext,
    evidence: Iterable[Evidence],
    scoring_dir: Path,
    *,
    total: int = 0,
    concurrency: int = 32,
    prompts: dict[str, str] | None = None,
    offline: bool = False,
    progress: Progress | None = None,
) -> GradingSummary:
    """Grade `evidence` into `scoring_dir/verdicts.jsonl`, a line per attempt as it is graded.

    Evidence of a case the project no longer has is skipped and counted. At most
    `concurrency` attempts are graded at once; each attempt's criteria run concurrently.
    """
    cases: dict[str, Case] = {case.id: case for case in loaded.cases()}
    created_at = datetime.now(UTC).isoformat()
    kinds = {spec.kind for case in cases.values() for spec in case.criteria}
    statuses: dict[Status, int] = dict.fromkeys(STATUSES, 0)
    source = _unique(evidence)
    done = skipped = 0
    path = scoring_dir / VERDICTS
    with naming(path), path.open("w", encoding="utf-8") as out:

        async def worker() -> None:
            nonlocal done, skipped
            for item in source:
                case = cases.get(item.case_id)
                if case is None:
                    skipped += 1
                    continue
                graded = await grade_attempt(loaded, case, item, ctx)
                out.write(redact(graded.model_dump_json()) + "\n")
                done += 1
                for verdict in graded.verdicts:
                    statuses[verdict.status] += 1
                if progress is not None:
                    progress(done, total)

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, concurrency)):
                    group.create_task(worker())
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
    summary = GradingSummary(
        scoring=scoring_dir.name,
        created_at=created_at,
        attempts=done,
        skipped=skipped,
        statuses=statuses,
        criterion_versions={kind: loaded.registry.version(kind) for kind in sorted(kinds)},
        prompts=dict(prompts or {}),
        offline=offline,
        judge=None,
    )
    write_json_atomically(scoring_dir / SCORING, summary.model_dump(mode="json"))
    return summary


def iter_graded(scoring_dir: Path) -> Iterator[GradedAttempt]:
    """Read `verdicts.jsonl` of a scoring a line at a time."""
    with (scoring_dir / VERDICTS).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield GradedAttempt.model_validate_json(line)
