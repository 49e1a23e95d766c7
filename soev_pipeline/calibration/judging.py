"""Grade labelled items with the judge, the way a run grades its attempts.

Each item is graded by its criterion as the project defines it now, through the registry
(`CriterionRegistry.evaluate`), over evidence that holds the labelled reply: the same
requests that grading a run with that reply would send, so the judge cache serves both and
a second calibration with unchanged prompts asks the model nothing. A tap on the judge
records the label it gave, for the label confusion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import ValidationError

from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.models import Case, CriterionSpec, Evidence, Turn, Verdict
from soev_pipeline.core.ports import CriterionContext, Judge, JudgeRequest, JudgeResult
from soev_pipeline.criteria.rubric import RubricParams
from soev_pipeline.project import LoadedProject

from .agreement import JudgeStatus, Outcome
from .items import Item
from .labels import criterion_of

NEEDS_VARIANTS = frozenset({"compare.equivalent"})
"""Kinds that grade the replies of a case's variants, which a label line does not hold."""


@dataclass(frozen=True)
class Graded:
    """An item the people decided, and what the judge made of it."""

    item: Item
    outcome: Outcome
    prompt_sha256: Mapping[str, str]


class _Tap:
    """A judge that passes each request on and remembers the labels it got back."""

    def __init__(self, inner: Judge) -> None:
        self._inner = inner
        self.labels: list[str] = []

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        result = await self._inner.judge(request)
        if isinstance(result, JudgeResult):
            self.labels.append(result.label)
        return result


def why_ungradable(item: Item) -> str | None:
    """Why `item` cannot be graded from its label lines alone, or None when it can."""
    if item.kind in NEEDS_VARIANTS:
        return (
            f"{item.kind!r} compares the replies of the case's variants, which a label line "
            "does not hold: it cannot be calibrated from labels"
        )
    return None


def evidence_of(case: Case, reply: str) -> Evidence:
    """An attempt of `case` whose final reply is `reply` (the last turn answered it)."""
    turns = tuple(Turn(input=text) for text in case.turns[:-1])
    last = Turn(input=case.turns[-1], reply=reply)
    return Evidence(
        case_id=case.id, suite=case.suite, split=case.split, turns=(*turns, last), reply=reply
    )


def prompt_digests(
    spec: CriterionSpec, verdict: Verdict, prompts: Mapping[str, str]
) -> dict[str, str]:
    """The digests of the prompt (and rubric) that graded `verdict`, by name: the task's
    prompt under the task's name, a rubric file under its path, a rubric criterion as
    `criterion:<name>`."""
    digests: dict[str, str] = {}
    text = prompts.get(spec.kind)
    if text is not None:
        digests[spec.kind] = sha256_text(text)
    elif verdict.prompt_sha is not None:
        digests[spec.kind] = verdict.prompt_sha
    if spec.kind == "rubric.judge" and verdict.rubric_sha is not None:
        try:
            params = RubricParams.model_validate(spec.params)
        except ValidationError:
            return digests
        if params.rubric is not None:
            digests[params.rubric] = verdict.rubric_sha
        elif params.criterion is not None:
            digests[f"criterion:{params.criterion.name or 'criterion'}"] = verdict.rubric_sha
    return digests


async def grade_item(
    loaded: LoadedProject,
    case: Case,
    item: Item,
    ctx: CriterionContext,
    prompts: Mapping[str, str],
) -> Graded | str:
    """Grade one decided item; or say why it counts nowhere (the criterion does not apply).

    A judge `error` verdict counts as the judge's fail, as everywhere in calibration.
    """
    spec = criterion_of(case, item.kind, item.nth)
    passed = item.passed
    if spec is None or passed is None:
        raise ValueError("grade_item takes items whose criterion exists and that were decided")
    tap = _Tap(ctx.judge) if ctx.judge is not None else None
    verdict = await loaded.registry.evaluate(
        spec, case, evidence_of(case, item.reply), ctx if tap is None else replace(ctx, judge=tap)
    )
    if verdict.status == "not_applicable":
        return f"{item.kind!r} does not apply to case {case.id!r} now: {verdict.detail}"
    status: JudgeStatus = verdict.status
    judge_label = tap.labels[0] if tap is not None and len(tap.labels) == 1 else None
    outcome = Outcome(passed, status, item.label, judge_label if status != "error" else None)
    return Graded(item, outcome, prompt_digests(spec, verdict, prompts))


async def grade_items(
    loaded: LoadedProject,
    items: Sequence[Item],
    cases: Mapping[str, Case],
    judge: Judge | None,
    prompts: Mapping[str, str],
) -> list[Graded | str]:
    """Grade `items` (decided, of criteria the project has) at once; results in order.

    The judge's adapter bounds how many requests are in flight.
    """
    ctx = replace(loaded.context, judge=judge)
    return list(
        await asyncio.gather(
            *(grade_item(loaded, cases[item.case_id], item, ctx, prompts) for item in items)
        )
    )
