"""Grade archived evidence with the project's current criteria, streaming to a scoring folder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from soev_pipeline.core.models import Case, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.project import LoadedProject

from .archive import SCORING, VERDICTS, write_json_atomically
from .scoring import score_attempt

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GradedAttempt:
    """One line of `verdicts.jsonl`: an attempt's verdicts with its score and pass."""

    case_id: str
    suite: str
    split: str
    attempt: int
    score: float | None
    passed: bool
    verdicts: tuple[Verdict, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "suite": self.suite,
            "split": self.split,
            "attempt": self.attempt,
            "score": self.score,
            "passed": self.passed,
            "verdicts": [verdict.model_dump(mode="json") for verdict in self.verdicts],
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> GradedAttempt:
        return cls(
            case_id=raw["case_id"],
            suite=raw["suite"],
            split=raw["split"],
            attempt=raw["attempt"],
            score=raw["score"],
            passed=raw["passed"],
            verdicts=tuple(Verdict.model_validate(verdict) for verdict in raw["verdicts"]),
        )


@dataclass
class GradingSummary:
    """What a grading did, in counts: the scoring folder's `scoring.json`."""

    scoring: str
    created_at: str
    attempts: int = 0
    skipped: int = 0
    statuses: dict[str, int] = field(
        default_factory=lambda: {"pass": 0, "fail": 0, "error": 0, "not_applicable": 0}
    )
    criterion_versions: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    judge: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scoring": self.scoring,
            "created_at": self.created_at,
            "attempts": self.attempts,
            "skipped": self.skipped,
            "statuses": self.statuses,
            "criterion_versions": self.criterion_versions,
            "prompts": self.prompts,
            "offline": self.offline,
            "judge": self.judge,
        }


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
    summary = GradingSummary(
        scoring=scoring_dir.name,
        created_at=datetime.now(UTC).isoformat(),
        prompts=dict(prompts or {}),
        offline=offline,
    )
    kinds = {spec.kind for case in cases.values() for spec in case.criteria}
    summary.criterion_versions = {kind: loaded.registry.version(kind) for kind in sorted(kinds)}
    source = _unique(evidence)
    done = 0
    with (scoring_dir / VERDICTS).open("w", encoding="utf-8") as out:

        async def worker() -> None:
            nonlocal done
            for item in source:
                case = cases.get(item.case_id)
                if case is None:
                    summary.skipped += 1
                    continue
                graded = await grade_attempt(loaded, case, item, ctx)
                out.write(json.dumps(graded.to_json(), ensure_ascii=False) + "\n")
                summary.attempts += 1
                for verdict in graded.verdicts:
                    summary.statuses[verdict.status] += 1
                done += 1
                if progress is not None:
                    progress(done, total)

        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, concurrency)):
                group.create_task(worker())
    write_json_atomically(scoring_dir / SCORING, summary.to_json())
    return summary


def iter_graded(scoring_dir: Path) -> Iterator[GradedAttempt]:
    """Read `verdicts.jsonl` of a scoring a line at a time."""
    with (scoring_dir / VERDICTS).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield GradedAttempt.from_json(json.loads(line))
