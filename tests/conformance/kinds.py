"""Small builders for grading one attempt with a kind, as the criteria reference describes it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from soev_pipeline.cli import load
from soev_pipeline.core import Case, CriterionContext, Evidence, JudgeRequest, JudgeResult, Verdict
from soev_pipeline.criteria import builtin_registry

NOW = "2026-01-01T00:00:00Z"


def make_case(**fields: Any) -> Case:
    data: dict[str, Any] = {"id": "c-1", "suite": "kern", "input": "Wat is de bezwaartermijn?"}
    data.update(fields)
    if "turns" in fields:
        data.pop("input")
    return Case.model_validate(data)


def turn(
    reply: str | None = "Antwoord.",
    citations: Sequence[str] = (),
    *,
    text: str = "Wat is de bezwaartermijn?",
    usage: dict[str, int] | None = None,
    duration_s: float = 0.1,
    failure: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "input": text,
        "reply": reply,
        "citations": list(citations),
        "usage": usage,
        "duration_s": duration_s,
        "failure": failure,
    }


def make_evidence(
    reply: str | None = "Antwoord.",
    citations: Sequence[str] = (),
    *,
    turns: list[dict[str, Any]] | None = None,
    variants: list[dict[str, Any]] | None = None,
    refusal_code: str | None = None,
    case_id: str = "c-1",
) -> Evidence:
    return Evidence.model_validate(
        {
            "case_id": case_id,
            "suite": "kern",
            "split": "dev",
            "attempt": 0,
            "turns": turns if turns is not None else [turn(reply, citations)],
            "reply": reply,
            "citations": list(citations),
            "refusal_code": refusal_code,
            "variants": variants or [],
            "started_at": NOW,
            "finished_at": NOW,
        }
    )


def variant(variant_id: str, reply: str | None, citations: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "id": variant_id,
        "reply": reply,
        "citations": list(citations),
        "turns": [turn(reply, citations, text="Andere formulering?")],
    }


def grade(
    kind: str,
    params: dict[str, Any] | None = None,
    case: Case | None = None,
    evidence: Evidence | None = None,
    ctx: CriterionContext | None = None,
) -> Verdict:
    """Validate `params` with the kind's model and run the kind's `evaluate`."""
    found = builtin_registry().get(kind)
    model = found.params_model.model_validate(params or {})
    return asyncio.run(
        found.evaluate(
            case or make_case(),
            evidence or make_evidence(),
            params=model,
            ctx=ctx or CriterionContext(),
        )
    )


class ScriptedJudge:
    """A Judge that answers each request with the next label of `labels` (or a callable)."""

    def __init__(self, *labels: Any) -> None:
        self.labels = list(labels)
        self.requests: list[JudgeRequest] = []

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        self.requests.append(request)
        label = self.labels.pop(0) if len(self.labels) > 1 else self.labels[0]
        if callable(label):
            label = label(request)
        return JudgeResult(label=label, detail="scripted")


def project_context(project: Path, **services: Any) -> CriterionContext:
    """The criterion context `load` gives for `project`, with the given judge or detector."""
    context = load(project).context
    return CriterionContext(
        messages=context.messages,
        rubrics=context.rubrics,
        corpus=context.corpus,
        **services,
    )
