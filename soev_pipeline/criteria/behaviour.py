"""Rule-based behaviour: the project message a refuse or abstain case expects.

`behaviour.expected` needs a judge and lives with the other judge kinds in `judged.py`.
"""

from __future__ import annotations

from soev_pipeline.core.messages import normalize, refusal_code
from soev_pipeline.core.models import Case, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext

from .kind import NoParams, criterion
from .verdicts import error, not_applicable, outcome


@criterion(
    "behaviour.message",
    NoParams,
    needs=(),
    summary=(
        "the reply holds the case's expected project message, whitespace and case aside; "
        "not applicable without `message`"
    ),
    example={"kind": "behaviour.message"},
)
async def message(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the reply holds the case's expected message, after normalization.

    Whitespace and case do not count, so a reply that wraps the message differently or
    starts it in lower case still holds it.
    """
    if case.message is None:
        return not_applicable("the case expects no project message")
    text = ctx.messages.get(case.message)
    if text is None:
        return error(f"the message code {case.message!r} is not a project message")
    if evidence.reply is None:
        return error("no reply")
    held = normalize(text) in normalize(evidence.reply)
    verb = "holds" if held else "does not hold"
    return outcome(passed=held, detail=f"the reply {verb} message {case.message!r}")


@criterion(
    "refusal.code",
    NoParams,
    needs=(),
    summary=(
        "the detected message code is the case's `message` (refuse or abstain; any code "
        "when it names none), or there is none (answer)"
    ),
    example={"kind": "refusal.code"},
)
async def code(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the detected refusal code is the one the case expects.

    The detected code is the evidence's `refusal_code` when the run set it, else the code
    of the project message the reply holds. A refuse or abstain case passes with its
    expected `message` code, or with any code when it names none: it asks for a refusal,
    not for a particular one. An answer case passes when no code is detected.
    """
    if evidence.reply is None:
        return error("no reply")
    expected = case.message
    if expected is not None and expected not in ctx.messages:
        return error(f"the message code {expected!r} is not a project message")
    detected = evidence.refusal_code
    if detected is None:
        detected = refusal_code(evidence.reply, ctx.messages)
    seen = "no refusal code" if detected is None else f"refusal code {detected!r}"
    if case.behaviour == "answer":
        return outcome(passed=detected is None, detail=f"answer case; detected {seen}")
    if expected is None:
        return outcome(
            passed=detected is not None, detail=f"{case.behaviour} case, any code; detected {seen}"
        )
    return outcome(passed=detected == expected, detail=f"expected {expected!r}; detected {seen}")
