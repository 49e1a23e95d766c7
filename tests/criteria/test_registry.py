"""The parts of a criterion kind: Builtin checks its parameters again whatever their type,
NoParams takes none, and the registry turns what an evaluator raises into an error verdict."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from soev_pipeline.core import Case, CriterionContext, CriterionSpec, Evidence, Verdict
from soev_pipeline.criteria import Builtin, CriterionRegistry, NoParams, builtin_registry, outcome
from soev_pipeline.criteria.reply import ContainsParams
from tests.support.builders import make_case, make_evidence


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    word: str


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    inner: Inner = Inner(word="dank")
    source: str = Field(default="reply", alias="from")


class Seen:
    params: BaseModel | None = None


async def remember(
    case: Case, evidence: Evidence, *, params: Params, ctx: CriterionContext
) -> Verdict:
    Seen.params = params
    return outcome(passed=True, detail=f"{params.inner.word} from {params.source}")


KIND: Builtin[Any] = Builtin("custom.remember", Params, remember)
NOT_A_STRING: Any = 5


def evaluate(kind: Builtin[Any], params: BaseModel) -> Verdict:
    coro = kind.evaluate(make_case(), make_evidence(), params=params, ctx=CriterionContext())
    return asyncio.run(coro)


def test_a_valid_instance_of_its_own_model_reaches_the_evaluator() -> None:
    params = Params.model_validate({"inner": {"word": "bedankt"}, "from": "prompt"})
    verdict = evaluate(KIND, params)
    assert (verdict.status, verdict.detail) == ("pass", "bedankt from prompt")
    assert type(Seen.params) is Params
    assert Seen.params == params


class LookAlike(BaseModel):
    inner: Inner
    source: str


def test_params_of_another_model_reach_the_evaluator_as_its_own_model() -> None:
    verdict = evaluate(KIND, LookAlike(inner=Inner(word="bedankt"), source="prompt"))
    assert (verdict.status, verdict.detail) == ("pass", "bedankt from prompt")
    assert type(Seen.params) is Params


def test_an_unvalidated_instance_of_its_own_model_is_refused() -> None:
    Seen.params = None
    with pytest.raises(ValidationError, match="valid string"):
        evaluate(KIND, Params.model_construct(source=NOT_A_STRING))
    assert Seen.params is None


def test_nested_models_are_validated_again() -> None:
    unvalidated = Params.model_construct(inner=Inner.model_construct(word=NOT_A_STRING))
    with pytest.raises(ValidationError, match=r"inner\.word"):
        evaluate(KIND, unvalidated)


def test_a_builtin_kind_runs_its_validators_again() -> None:
    kind = builtin_registry().get("reply.contains")
    assert isinstance(kind, Builtin)
    with pytest.raises(ValidationError, match="empty substring"):
        evaluate(kind, ContainsParams.model_construct(substrings=("",)))


def test_through_the_registry_invalid_params_give_an_error_verdict() -> None:
    registry = CriterionRegistry([KIND])
    evaluation = registry.evaluate(
        CriterionSpec(kind="custom.remember"),
        make_case(),
        make_evidence(),
        CriterionContext(),
        params=Params.model_construct(inner=Inner.model_construct(word=NOT_A_STRING)),
    )
    verdict = asyncio.run(evaluation)
    assert verdict.status == "error"
    assert verdict.detail.startswith("criterion raised ValidationError")


class BrokenAdapter:
    """A judge whose adapter fails with something other than JudgeError."""

    async def judge(self, request: Any) -> Any:
        raise RuntimeError("adapter bug")


def test_a_judge_exception_other_than_judge_error_stops_the_run() -> None:
    registry = builtin_registry()
    case = make_case(nuggets=[{"text": "Zes weken."}])
    spec = CriterionSpec(kind="nuggets.coverage")
    ctx = CriterionContext(judge=BrokenAdapter())
    with pytest.raises(RuntimeError, match="adapter bug"):
        asyncio.run(registry.evaluate(spec, case, make_evidence(), ctx))


def test_an_evaluator_that_raises_gives_an_error_verdict() -> None:
    async def broken(case: Case, evidence: Evidence, *, params: Params, ctx: CriterionContext):  # type: ignore[no-untyped-def]
        raise KeyError("missing")

    registry = CriterionRegistry([Builtin("custom.broken", Params, broken)])
    spec = CriterionSpec(kind="custom.broken")
    verdict = asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), CriterionContext()))
    assert verdict.status == "error"
    assert verdict.detail == "criterion raised KeyError: 'missing'"


def test_noparams_has_no_fields_and_refuses_any() -> None:
    assert NoParams.model_fields == {}
    NoParams()
    with pytest.raises(ValidationError):
        NoParams.model_validate({"strict": True})


def test_builtin_is_a_dataclass_of_name_params_model_and_evaluator() -> None:
    assert dataclasses.is_dataclass(Builtin)
    names = [field.name for field in dataclasses.fields(Builtin)]
    assert names[:3] == ["name", "params_model", "evaluator"]
