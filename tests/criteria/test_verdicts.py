"""The verdict helpers of the criteria reference, and judge_label, which fails closed."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from soev_pipeline.core import (
    CriterionContext,
    JudgeError,
    JudgeRequest,
    JudgeResult,
    Verdict,
)
from soev_pipeline.criteria import error, judge_label, not_applicable, outcome
from soev_pipeline.criteria.verdicts import completed
from tests.support.builders import ScriptedJudge, label


def test_outcome_passes_or_fails_with_a_detail() -> None:
    assert (outcome(passed=True).status, outcome(passed=True).detail) == ("pass", "")
    failed = outcome(passed=False, detail="te lang")
    assert (failed.status, failed.detail) == ("fail", "te lang")
    with pytest.raises(TypeError):
        outcome(True)  # type: ignore[misc]


def test_error_and_not_applicable_take_a_detail_and_keep_it() -> None:
    assert list(inspect.signature(error).parameters) == ["detail"]
    assert list(inspect.signature(not_applicable).parameters) == ["detail"]
    assert (error("geen antwoord").status, error("geen antwoord").detail) == (
        "error",
        "geen antwoord",
    )
    skipped = not_applicable("geen bericht")
    assert (skipped.status, skipped.detail) == ("not_applicable", "geen bericht")


REQUEST = JudgeRequest(
    task="behaviour.expected", inputs={"reply": "x"}, allowed_labels=("answer", "refuse")
)


def ask(judge: Any) -> JudgeResult | Verdict:
    return asyncio.run(judge_label(REQUEST, CriterionContext(judge=judge)))


def test_judge_label_returns_the_result_of_an_allowed_label() -> None:
    result = ask(ScriptedJudge(label("refuse")))
    assert isinstance(result, JudgeResult)
    assert result.label == "refuse"


@pytest.mark.parametrize(
    "judge",
    [
        None,
        ScriptedJudge(JudgeError("judge call failed: HTTP 500")),
        ScriptedJudge({"detail": "geen label"}),
        ScriptedJudge("refuse"),
        ScriptedJudge({"label": 3}),
        ScriptedJudge(JudgeResult.model_construct(label=None, detail="x")),
        ScriptedJudge(label("abstain")),
    ],
    ids=[
        "no judge",
        "JudgeError",
        "no label",
        "a string",
        "label not a string",
        "invalid model",
        "label not allowed",
    ],
)
def test_judge_label_gives_an_error_verdict_for_each_failure(judge: Any) -> None:
    result = ask(judge)
    assert isinstance(result, Verdict)
    assert result.status == "error"
    assert result.detail


def test_completed_is_the_copy_pydantic_makes() -> None:
    """`completed` gives what `model_copy(update=...)` gives: equal, with the same fields
    set and the same JSON; a subclass of `Verdict` is copied by pydantic itself."""
    fields = {"kind": "reply.language", "weight": 2.0, "gate": True, "version": "3"}
    for verdict in [outcome(passed=True, detail="6/6"), error("kapot"), Verdict(status="fail")]:
        copy, expected = completed(verdict, fields), verdict.model_copy(update=fields)
        assert type(copy) is Verdict and copy == expected
        assert copy.model_fields_set == expected.model_fields_set
        assert copy.model_dump_json() == expected.model_dump_json()
        assert copy.model_copy(update={"detail": "x"}).detail == "x"
        assert verdict.kind == ""

    class Marked(Verdict):
        mark: str = "m"

    marked = completed(Marked(status="pass"), fields)
    assert isinstance(marked, Marked) and marked.kind == "reply.language"
