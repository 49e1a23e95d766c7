"""The parts of a criterion kind: Builtin checks its parameters again whatever their type,
and carries its traits (made with `criterion` or the seed's constructor); NoParams takes
none; the registry gives a kind that is not a Builtin the default traits, trusts the
parameters it validated itself, says which kinds a worker may grade, and turns what an
evaluator raises into an error verdict."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from soev_pipeline.core import Case, CriterionContext, CriterionSpec, Evidence, Verdict
from soev_pipeline.core.errors import DuplicateCriterionError, UnknownCriterionError
from soev_pipeline.criteria import (
    NEEDS,
    Builtin,
    CriterionRegistry,
    NoParams,
    builtin_registry,
    criterion,
    outcome,
)
from soev_pipeline.criteria.reply import ContainsParams
from tests.support.builders import ScriptedJudge, make_case, make_evidence


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


def test_a_judge_exception_other_than_judge_error_stops_the_run() -> None:
    registry = builtin_registry()
    case = make_case(nuggets=[{"text": "Zes weken."}])
    spec = CriterionSpec(kind="nuggets.coverage")
    ctx = CriterionContext(judge=ScriptedJudge(RuntimeError("adapter bug")))  # not JudgeError
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


def test_builtin_takes_its_traits_by_keyword_after_the_fields_of_the_reference() -> None:
    kind = Builtin("custom.remember", Params, remember, "3", needs={"corpus"})  # type: ignore[arg-type]
    assert (kind.version, kind.needs, kind.summary, dict(kind.example)) == (
        "3",
        frozenset({"corpus"}),
        "",
        {},
    )
    with pytest.raises(TypeError):
        Builtin("custom.remember", Params, remember, "1", frozenset())  # type: ignore[misc]


def test_a_builtin_that_does_not_say_what_it_needs_needs_everything() -> None:
    assert KIND.needs == NEEDS == {"judge", "language_detector", "corpus"}
    assert KIND.needs_judge


@pytest.mark.parametrize(
    ("traits", "message"),
    [
        ({"needs": frozenset({"judges"})}, "unknown needs"),
        ({"example": {"kind": "custom.other"}}, "must say kind: custom.remember"),
        ({"needs": frozenset(), "labels": ("ja", "nee")}, "its needs lack 'judge'"),
        ({"labels": ("ja", "ja")}, "unique and not blank"),
        ({"labels": ("ja", " ")}, "unique and not blank"),
    ],
)
def test_a_builtin_with_wrong_traits_is_refused(traits: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Builtin("custom.remember", Params, remember, **traits)


class Unknown:
    """A kind that is not a Builtin: it has the protocol, and says nothing about itself."""

    name = "custom.unknown"
    params_model = NoParams

    async def evaluate(
        self, case: Case, evidence: Evidence, *, params: BaseModel, ctx: CriterionContext
    ) -> Verdict:
        return outcome(passed=True, detail="unknown passes")


def test_the_criterion_decorator_makes_a_builtin_with_its_traits() -> None:
    def words(params: Params) -> tuple[str, ...]:
        return (params.inner.word, "anders")

    @criterion(
        "custom.decorated",
        Params,
        version="4",
        needs=["judge"],
        summary="the judge says the word",
        example={"kind": "custom.decorated", "from": "prompt"},
        labels=words,
        files=lambda params: [f"{params.source}.md"],
    )
    async def decorated(
        case: Case, evidence: Evidence, *, params: Params, ctx: CriterionContext
    ) -> Verdict:
        return outcome(passed=True, detail=params.inner.word)

    assert isinstance(decorated, Builtin)
    assert (decorated.name, decorated.params_model, decorated.version) == (
        "custom.decorated",
        Params,
        "4",
    )
    assert decorated.needs == {"judge"} and decorated.summary == "the judge says the word"
    assert decorated.example == {"kind": "custom.decorated", "from": "prompt"}
    params = Params.model_validate({"from": "prompt"})
    assert decorated.labelled and decorated.labels_of(params) == ("dank", "anders")
    assert decorated.files_of(params) == ("prompt.md",)
    assert evaluate(decorated, params).detail == "dank"


def test_a_kind_without_labels_or_files_has_none() -> None:
    assert not KIND.labelled
    assert KIND.labels_of(Params()) == () and KIND.files_of(Params()) == ()
    fixed = Builtin("custom.fixed", Params, remember, labels=["ja", "nee"])  # type: ignore[arg-type]
    assert fixed.labels == ("ja", "nee") and fixed.labels_of(Params()) == ("ja", "nee")


def test_a_kind_that_is_not_a_builtin_gets_the_default_traits() -> None:
    registry = CriterionRegistry([Unknown()])
    kind = registry.get("custom.unknown")
    assert isinstance(kind, Builtin) and kind.params_model is NoParams
    assert (kind.version, kind.needs, kind.labelled, kind.files) == ("", NEEDS, False, None)
    assert registry.version("custom.unknown") == ""
    spec = CriterionSpec(kind="custom.unknown")
    verdict = asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), CriterionContext()))
    assert (verdict.status, verdict.detail, verdict.version) == ("pass", "unknown passes", "")


def test_a_kind_that_is_not_a_builtin_gets_validated_parameters() -> None:
    class Strict(Unknown):
        name = "custom.strict"
        params_model = Params

        async def evaluate(
            self, case: Case, evidence: Evidence, *, params: BaseModel, ctx: CriterionContext
        ) -> Verdict:
            return outcome(passed=type(params) is Params, detail=type(params).__name__)

    registry = CriterionRegistry([Strict()])
    spec = CriterionSpec.model_validate({"kind": "custom.strict", "from": "prompt"})
    ctx = CriterionContext()
    for params in (None, registry.validate(spec), LookAlike(inner=Inner(word="a"), source="b")):
        verdict = asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), ctx, params))
        assert (verdict.status, verdict.detail) == ("pass", "Params")


def test_a_registry_refuses_what_is_not_a_kind_and_a_taken_name() -> None:
    registry = CriterionRegistry([KIND])
    with pytest.raises(TypeError, match="is not a criterion kind"):
        registry.register(object())  # type: ignore[arg-type]
    with pytest.raises(DuplicateCriterionError, match=r"'custom\.remember' is already registered"):
        registry.register(Builtin("custom.remember", NoParams, remember))
    with pytest.raises(UnknownCriterionError, match=r"did you mean 'custom\.remember'"):
        registry.get("custom.remembr")


def test_the_registry_says_which_kinds_a_forked_worker_may_grade() -> None:
    def kind(name: str, *needs: Any) -> Builtin[Any]:
        return Builtin(name, NoParams, remember, needs=frozenset(needs))

    registry = CriterionRegistry(
        [
            kind("custom.pure"),
            kind("custom.corpus", "corpus"),
            kind("custom.language", "language_detector"),
            kind("custom.judged", "judge", "corpus"),
            KIND,
            Unknown(),
        ]
    )
    assert registry.needs("custom.unknown") == NEEDS
    assert registry.needs("custom.corpus") == {"corpus"}
    pure = {"custom.pure", "custom.corpus"}
    assert registry.forkable(detector_forks=False) == pure
    assert registry.forkable(detector_forks=True) == pure | {"custom.language"}


class Counted(BaseModel):
    """Parameters that count their validations; not frozen, so a field can be replaced."""

    model_config = ConfigDict(extra="forbid")

    word: str = "dank"

    @field_validator("word")
    @classmethod
    def _count(cls, word: str) -> str:
        Counted.validations += 1
        return word

    validations: ClassVar[int] = 0


async def remember_counted(
    case: Case, evidence: Evidence, *, params: Counted, ctx: CriterionContext
) -> Verdict:
    Seen.params = params
    return outcome(passed=True, detail=params.word)


COUNTED: Builtin[Any] = Builtin("custom.counted", Counted, remember_counted)


def _through(registry: CriterionRegistry, params: BaseModel | None, kind: str) -> Verdict:
    spec = CriterionSpec.model_validate({"kind": kind, "word": "bedankt"})
    ctx = CriterionContext()
    return asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), ctx, params))


def _validated(registry: CriterionRegistry) -> Counted:
    params = registry.validate(CriterionSpec.model_validate({"kind": "custom.counted"}))
    assert isinstance(params, Counted)
    return params


def test_parameters_the_registry_validated_reach_the_evaluator_unvalidated() -> None:
    registry = CriterionRegistry([COUNTED])
    params = _validated(registry)
    Counted.validations = 0
    for _ in range(3):
        assert _through(registry, params, "custom.counted").status == "pass"
    assert Seen.params is params
    assert Counted.validations == 0


def test_parameters_the_registry_did_not_validate_are_validated_again() -> None:
    registry = CriterionRegistry([COUNTED])
    elsewhere = _validated(CriterionRegistry([COUNTED]))
    built = Counted(word="dank")
    Counted.validations = 0
    _through(registry, elsewhere, "custom.counted")
    _through(registry, built, "custom.counted")
    _through(registry, None, "custom.counted")  # validated from the spec, once
    assert Counted.validations == 3
    assert Seen.params is not None and Seen.params.word == "bedankt"  # type: ignore[attr-defined]


def test_parameters_validated_for_another_kind_are_validated_again() -> None:
    twin = Builtin("custom.twin", Counted, remember_counted)
    registry = CriterionRegistry([COUNTED, twin])
    params = _validated(registry)
    Counted.validations = 0
    _through(registry, params, "custom.twin")
    assert Counted.validations == 1


def test_parameters_changed_after_validation_are_validated_again() -> None:
    registry = CriterionRegistry([COUNTED])
    params = _validated(registry)
    params.word = NOT_A_STRING
    verdict = _through(registry, params, "custom.counted")
    assert verdict.status == "error"
    assert verdict.detail.startswith("criterion raised ValidationError")


def test_a_frozen_model_changed_behind_its_back_is_validated_again() -> None:
    registry = builtin_registry()
    spec = CriterionSpec.model_validate({"kind": "reply.max_length", "max": 10})
    params = registry.validate(spec)
    ctx = CriterionContext()
    passed = asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), ctx, params))
    assert passed.status == "pass"
    object.__setattr__(params, "max", -1)
    verdict = asyncio.run(registry.evaluate(spec, make_case(), make_evidence(), ctx, params))
    assert (verdict.status, verdict.detail[:32]) == ("error", "criterion raised ValidationError")


def test_prepare_gives_each_kind_with_the_trait_the_evidence_it_will_grade() -> None:
    """A kind's `prepare` gets, in one call, the evidence of every pair that names it; a kind
    without the trait gets nothing, and a `prepare` that raises is passed over (the
    evaluator does the work again and reports it)."""
    prepared: list[tuple[str, list[str | None]]] = []

    def noting(name: str) -> Any:
        def prepare(evidence: Any, ctx: CriterionContext) -> None:
            prepared.append((name, [item.reply for item in evidence]))

        return prepare

    def failing(evidence: Any, ctx: CriterionContext) -> None:
        raise RuntimeError("broken")

    registry = CriterionRegistry(
        [
            Builtin("custom.a", Params, remember, prepare=noting("a")),
            Builtin("custom.b", Params, remember, prepare=noting("b")),
            Builtin("custom.failing", Params, remember, prepare=failing),
            KIND,
        ]
    )
    first, second = make_evidence("een"), make_evidence("twee")
    pairs = [
        (CriterionSpec(kind="custom.a"), first),
        (CriterionSpec(kind="custom.remember"), first),
        (CriterionSpec(kind="custom.failing"), first),
        (CriterionSpec(kind="custom.a"), second),
        (CriterionSpec(kind="custom.b"), second),
    ]
    registry.prepare(iter(pairs), CriterionContext())
    assert prepared == [("a", ["een", "twee"]), ("b", ["twee"])]
    assert KIND.prepare is None
    decorated = criterion("custom.c", Params, prepare=noting("c"))(remember)
    assert decorated.prepare is not None


def test_a_bound_criterion_grades_many_attempts_as_evaluate_does() -> None:
    """`bind` looks the kind up and checks the parameters once; each evaluation gives the
    verdict of `evaluate`, with the spec's kind, weight, gate and the kind's version, and
    parameters that do not validate give an error verdict every time."""
    registry = CriterionRegistry([COUNTED])
    spec = CriterionSpec(kind="custom.counted", weight=2.0, gate=True)
    bound = registry.bind(spec)
    ctx = CriterionContext()
    for reply in ["een", "twee"]:
        evidence = make_evidence(reply)
        verdict = asyncio.run(bound.evaluate(make_case(), evidence, ctx))
        assert verdict == asyncio.run(registry.evaluate(spec, make_case(), evidence, ctx))
        assert (verdict.kind, verdict.weight, verdict.gate) == ("custom.counted", 2.0, True)
    refused = registry.bind(CriterionSpec(kind="custom.counted", params={"unknown": 1}))
    for _ in range(2):
        verdict = asyncio.run(refused.evaluate(make_case(), make_evidence(), ctx))
        assert verdict.status == "error" and "unknown" in verdict.detail
    with pytest.raises(UnknownCriterionError):
        registry.bind(CriterionSpec(kind="custom.countd"))
