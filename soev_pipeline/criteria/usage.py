"""Budget and health criteria over all turns: tokens, seconds, failures."""

from __future__ import annotations

from pydantic import Field

from soev_pipeline.core.models import Case, Evidence, FrozenModel, Verdict
from soev_pipeline.core.ports import CriterionContext

from .kind import NoParams, criterion
from .verdicts import error, outcome


class MaxTokensParams(FrozenModel):
    """`max`: the most tokens, prompt and completion, that all turns may use together."""

    max: int = Field(ge=0)


class MaxSecondsParams(FrozenModel):
    """`max`: the most seconds that all turns may take together, retries included."""

    max: float = Field(ge=0)


@criterion(
    "usage.max_tokens",
    MaxTokensParams,
    needs=(),
    summary=(
        "the prompt and completion tokens of all turns are at most `max`; "
        "error when a turn reported no usage"
    ),
    example={"kind": "usage.max_tokens", "max": 4000},
)
async def max_tokens(
    case: Case, evidence: Evidence, *, params: MaxTokensParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the turns of the case and its variants use at most `max` tokens.

    A turn without usage makes the total unknown, so the verdict is an error rather than
    a pass on a partial count.
    """
    turns = evidence.all_turns()
    if not turns:
        return error("the attempt has no turns")
    unknown = sum(1 for turn in turns if turn.usage is None)
    if unknown:
        return error(f"{unknown} of {len(turns)} turns reported no token usage")
    total = sum(turn.usage.total_tokens for turn in turns if turn.usage is not None)
    return outcome(passed=total <= params.max, detail=f"{total} tokens (max {params.max})")


@criterion(
    "usage.max_seconds",
    MaxSecondsParams,
    needs=(),
    summary="the durations of all turns add up to at most `max` seconds",
    example={"kind": "usage.max_seconds", "max": 30},
)
async def max_seconds(
    case: Case, evidence: Evidence, *, params: MaxSecondsParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the turns of the case and its variants take at most `max` seconds."""
    turns = evidence.all_turns()
    if not turns:
        return error("the attempt has no turns")
    total = sum(turn.duration_s for turn in turns)
    return outcome(passed=total <= params.max, detail=f"{total:.2f} s (max {params.max:g} s)")


@criterion(
    "run.no_failure",
    NoParams,
    needs=(),
    summary="the attempt recorded turns, and none of them failed",
    example={"kind": "run.no_failure", "gate": True},
)
async def no_failure(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the attempt recorded turns and none of them failed; no turns at all fails."""
    turns = evidence.all_turns()
    failed = [turn.failure for turn in turns if turn.failure is not None]
    if failed:
        first = failed[0]
        return outcome(passed=False, detail=f"{len(failed)} failed turn(s); first: {first.code}")
    if not turns:
        return outcome(passed=False, detail="the attempt recorded no turn")
    return outcome(passed=True, detail=f"{len(turns)} turn(s) without failure")
