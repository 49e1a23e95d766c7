"""Builders of the unit tests: a case, its evidence, one graded criterion, a scripted judge
and language detector, the `system:` section of a project.

Every builder fills in what a test does not care about, so a test names only what it checks.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from soev_pipeline.arms import RetryPolicy
from soev_pipeline.core import (
    Case,
    CriterionContext,
    CriterionParamsError,
    CriterionSpec,
    Evidence,
    Failure,
    JudgeRequest,
    JudgeResult,
    LanguageDetectionError,
    Turn,
    Usage,
    VariantEvidence,
    Verdict,
)
from soev_pipeline.core.project import SystemConfig
from soev_pipeline.criteria import builtin_registry

QUESTION = "Hoe lang duurt bezwaar?"
MOMENT = datetime(2025, 1, 1, tzinfo=UTC)


def make_case(**fields: Any) -> Case:
    """Case `kern-001` of suite `kern` that asks `QUESTION`; `fields` add to it or replace."""
    data: dict[str, Any] = {"id": "kern-001", "suite": "kern", **fields}
    if "turns" not in data:
        data.setdefault("input", QUESTION)
    return Case.model_validate(data)


def conversation(
    *turns: str, variants: tuple[tuple[str, ...], ...] = (), case_id: str = "c-1"
) -> Case:
    """A dev case of suite `kern` with these user `turns`; variant n is `{case_id}-{n}`."""
    return Case.model_validate(
        {
            "id": case_id,
            "suite": "kern",
            "split": "dev",
            "turns": list(turns),
            "variants": [
                {"id": f"{case_id}-{index}", "turns": list(texts)}
                for index, texts in enumerate(variants)
            ],
        }
    )


FAST_RETRY = RetryPolicy(backoff_s=0.01, backoff_cap_s=0.05)
"""Retries of the arms' tests: the rules of the product, the waits of a test."""


def system_config(url: str, **overrides: Any) -> SystemConfig:
    """The `system:` section of a project for the system at `url`."""
    settings: dict[str, Any] = {
        "base_url": url,
        "agent": "wetwijzer",
        "timeout_s": 5,
        "concurrency": 4,
        "max_retries": 2,
    }
    return SystemConfig.model_validate({**settings, **overrides})


def make_turn(
    reply: str | None = "Zes weken.",
    *,
    citations: Iterable[str] = (),
    tokens: tuple[int, int] | None = None,
    seconds: float = 0.0,
    failure: str | None = None,
) -> Turn:
    """One user turn: `tokens` are (prompt, completion); a turn without a reply timed out."""
    if reply is None and failure is None:
        failure = "timeout"
    usage = None if tokens is None else Usage(prompt_tokens=tokens[0], completion_tokens=tokens[1])
    return Turn(
        input=QUESTION,
        reply=reply,
        citations=tuple(citations),
        usage=usage,
        duration_s=seconds,
        failure=None if failure is None else Failure(code=failure),
    )


def make_variant(
    variant_id: str, reply: str | None = "Zes weken.", citations: Iterable[str] = ()
) -> VariantEvidence:
    """What the thread of variant `variant_id` returned in one turn."""
    citations = tuple(citations)
    return VariantEvidence(
        id=variant_id,
        reply=reply,
        citations=citations,
        turns=(make_turn(reply, citations=citations),),
    )


def make_evidence(
    reply: str | None = "Zes weken.",
    *,
    citations: Iterable[str] = (),
    turns: Iterable[Turn] = (),
    variants: Iterable[VariantEvidence] = (),
    refusal_code: str | None = None,
) -> Evidence:
    """Evidence of attempt 0 of `kern-001`, whose final reply is `reply` (None: no reply)."""
    return Evidence(
        case_id="kern-001",
        suite="kern",
        split="dev",
        attempt=0,
        turns=tuple(turns),
        reply=reply,
        citations=tuple(citations),
        refusal_code=refusal_code,
        variants=tuple(variants),
        started_at=MOMENT,
        finished_at=MOMENT,
    )


async def evaluate(
    kind: str,
    evidence: Evidence | None = None,
    *,
    case: Case | None = None,
    ctx: CriterionContext | None = None,
    **params: Any,
) -> Verdict:
    """Validate and evaluate one criterion through the built-in registry, as a run does."""
    spec = CriterionSpec.model_validate({"kind": kind, **params})
    return await builtin_registry().evaluate(
        spec,
        make_case() if case is None else case,
        make_evidence() if evidence is None else evidence,
        CriterionContext() if ctx is None else ctx,
    )


def grade(
    kind: str,
    evidence: Evidence | None = None,
    *,
    case: Case | None = None,
    ctx: CriterionContext | None = None,
    **params: Any,
) -> Verdict:
    """`evaluate` on an event loop of its own."""
    return asyncio.run(evaluate(kind, evidence, case=case, ctx=ctx, **params))


def params_error(kind: str, **params: Any) -> str:
    """The message with which the built-in registry refuses these parameters at load."""
    spec = CriterionSpec.model_validate({"kind": kind, **params})
    with pytest.raises(CriterionParamsError) as raised:
        builtin_registry().validate(spec)
    return str(raised.value)


Answer = object
Script = Callable[[JudgeRequest], Answer]


def label(name: str, detail: str = "") -> JudgeResult:
    """A judge's answer with `name` as its label."""
    return JudgeResult(label=name, detail=detail, model="judge-m", prompt_sha="p" * 64)


def by_input(key: str, answers: Mapping[str, Answer]) -> Script:
    """A script that answers by the value of `inputs[key]` (a nugget text, a variant reply)."""
    return lambda request: answers[str(request.inputs[key])]


class ScriptedJudge:
    """A judge that records each request and answers what its script says.

    The script is one answer for every request or a function of the request, which may be
    a coroutine function. An answer is a `JudgeResult`, an exception to raise, or anything
    else (garbage a real judge never gives).
    """

    def __init__(self, script: Script | Answer) -> None:
        self._script = script
        self.requests: list[JudgeRequest] = []

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        self.requests.append(request)
        answer = self._script(request) if callable(self._script) else self._script
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[return-value]


class ScriptedDetector:
    """A language detector that answers from a table and raises for a text it does not know."""

    def __init__(self, answers: Mapping[str, str]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def detect(self, text: str) -> str:
        self.asked.append(text)
        if text not in self.answers:
            raise LanguageDetectionError("unknown")
        return self.answers[text]
