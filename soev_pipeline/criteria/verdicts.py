"""Make the verdict an evaluator returns, keep its detail short, and ask the judge for a label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.models import Verdict
from soev_pipeline.core.ports import CriterionContext, JudgeRequest, JudgeResult
from soev_pipeline.text import shorten as shorten_text

DETAIL_CHARS = 160


def shorten(text: str, limit: int = DETAIL_CHARS) -> str:
    """Collapse the whitespace of `text` and cut it to `limit` characters.

    Verdict details may quote a reply, a corpus quote or a judge's explanation, but only
    briefly: test cases are secret, and a detail should stay one short line.
    """
    return shorten_text(text, limit, flatten=True)


def completed(verdict: Verdict, fields: Mapping[str, Any]) -> Verdict:
    """`verdict` with `fields` replaced, as `verdict.model_copy(update=fields)` makes it.

    Both `verdict` and `fields` hold valid values already, so nothing is validated; the
    copy is made as pydantic's own `__copy__` makes one, without its look-up of private
    attributes that a `Verdict` has not (an `AttributeError` raised and caught for every
    verdict: the registry completes one for every criterion of every attempt). A subclass
    of `Verdict`, which may have private attributes or extra fields, is copied by pydantic.
    """
    if type(verdict) is not Verdict:
        return verdict.model_copy(update=fields)
    copy = Verdict.__new__(Verdict)
    object.__setattr__(copy, "__dict__", {**verdict.__dict__, **fields})
    object.__setattr__(copy, "__pydantic_fields_set__", {*verdict.model_fields_set, *fields})
    object.__setattr__(copy, "__pydantic_extra__", None)
    object.__setattr__(copy, "__pydantic_private__", None)
    return copy


def outcome(*, passed: bool, detail: str = "") -> Verdict:
    """Return a pass or fail verdict with a useful explanation."""
    return Verdict(status="pass" if passed else "fail", detail=detail)


def error(detail: str) -> Verdict:
    """Return a verdict with the status error: the criterion cannot grade the evidence."""
    return Verdict(status="error", detail=detail)


def not_applicable(detail: str) -> Verdict:
    """Return a verdict that counts neither in the score nor in the pass of the attempt."""
    return Verdict(status="not_applicable", detail=detail)


async def judge_label(request: JudgeRequest, ctx: CriterionContext) -> JudgeResult | Verdict:
    """Ask the judge of `ctx` to label `request`, and expose unusable results as errors.

    Returns the judge result when its label is one of `request.allowed_labels`; otherwise a
    verdict with the status error: no judge, a `JudgeError`, output that does not validate
    as a `JudgeResult`, or a label that is not allowed. The judge fails closed: nothing
    here turns a missing or unusable answer into a pass.
    """
    if ctx.judge is None:
        return error(f"no judge is configured for the judge task {request.task!r}")
    try:
        raw: object = await ctx.judge.judge(request)
    except JudgeError as exc:
        return error(f"judge failed on {request.task!r}: {exc}")
    try:
        result = JudgeResult.model_validate(
            raw.model_dump() if isinstance(raw, JudgeResult) else raw
        )
    except ValidationError as exc:
        return error(
            f"judge output for {request.task!r} is not a valid result "
            f"({exc.error_count()} validation error(s))"
        )
    if result.label not in request.allowed_labels:
        allowed = ", ".join(repr(label) for label in request.allowed_labels)
        return error(f"judge label {result.label!r} for {request.task!r} is not one of {allowed}")
    return result
