"""soev_pipeline.criteria as the criteria reference describes it: the 22 kinds, their
parameters and defaults, Builtin, NoParams, the verdict helpers and judge_label."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from soev_pipeline.core import (
    Case,
    CriterionContext,
    Evidence,
    FrozenModel,
    JudgeError,
    JudgeRequest,
    JudgeResult,
    Verdict,
)
from soev_pipeline.criteria import (
    Builtin,
    NoParams,
    builtin_registry,
    error,
    judge_label,
    not_applicable,
    outcome,
)
from soev_pipeline.judges import LangidDetector
from tests.conformance.kinds import (
    ScriptedJudge,
    grade,
    make_case,
    make_evidence,
    project_context,
    turn,
    variant,
)
from tests.conformance.support import PRIVACY_MESSAGE, write_project

KINDS: dict[str, dict[str, Any]] = {
    # kind: {parameter: default, or REQUIRED}
    "reply.language": {"language": "REQUIRED", "min_share": 1.0},
    "reply.contains": {"substrings": [], "regex": [], "case_sensitive": False},
    "reply.not_contains": {"substrings": [], "regex": [], "case_sensitive": False},
    "reply.max_length": {"max": "REQUIRED"},
    "privacy.none": {"target": "reply", "kinds": ["bsn", "iban", "email", "nl_phone"]},
    "privacy.names": {"target": "ANY"},
    "behaviour.expected": {},
    "behaviour.message": {},
    "refusal.code": {},
    "citations.required": {"match": "hierarchical", "min": 1.0},
    "citations.forbidden": {"match": "ANY"},
    "citations.in_corpus": {},
    "citations.unseen": {"match": "ANY"},
    "citations.quotes_verbatim": {},
    "citations.mentions_in_corpus": {},
    "nuggets.coverage": {"min": 1.0},
    "rubric.judge": {"rubric": "ANY", "labels": "ANY", "pass_labels": "ANY"},
    "compare.equivalent": {},
    "compare.same_citations": {},
    "usage.max_tokens": {"max": "REQUIRED"},
    "usage.max_seconds": {"max": "REQUIRED"},
    "run.no_failure": {},
}
JUDGE_KINDS = (
    "behaviour.expected",
    "privacy.names",
    "nuggets.coverage",
    "rubric.judge",
    "compare.equivalent",
)
CORPUS_KINDS = ("citations.in_corpus", "citations.quotes_verbatim", "citations.mentions_in_corpus")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(
        tmp_path_factory.mktemp("criteria") / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/"
    )


# --------------------------------------------------------------------------- the registry


def test_builtin_registry_has_the_22_kinds() -> None:
    registry = builtin_registry()
    assert len(registry) == 22
    assert set(registry) == set(KINDS)
    assert builtin_registry() is not registry


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_has_the_parameters_and_defaults_of_the_reference(name: str) -> None:
    kind = builtin_registry().get(name)
    assert isinstance(kind, Builtin)
    assert kind.name == name
    expected = KINDS[name]
    fields = kind.params_model.model_fields
    if name == "rubric.judge":
        assert set(expected) <= set(fields)  # SPEC 9 adds the watsonx.gov-style criterion
    else:
        assert set(fields) == set(expected)
    required = {key: value for key, value in expected.items() if value == "REQUIRED"}
    for field in required:
        assert fields[field].is_required(), field
    sample = {"language": "nl", "max": 10}
    given = {k: v for k, v in sample.items() if k in required}
    if name == "rubric.judge":
        given = {"rubric": "r.md", "labels": ["a"], "pass_labels": ["a"]}
    if name in ("reply.contains", "reply.not_contains"):
        # one pattern given, so that each default can be seen beside it
        for field in ("substrings", "regex"):
            other = kind.params_model.model_validate({field: ["x"]})
            assert list(getattr(other, "regex" if field == "substrings" else "substrings")) == []
            assert other.case_sensitive is False
        return
    model = kind.params_model.model_validate(given)
    for field, default in expected.items():
        if default in ("REQUIRED", "ANY"):
            continue
        value = getattr(model, field)
        if isinstance(default, list):
            assert list(value) == default, field
        else:
            assert value == default, field
    with pytest.raises(pydantic.ValidationError):
        kind.params_model.model_validate({**given, "onbekend": 1})


@pytest.mark.parametrize("name", ["reply.contains", "reply.not_contains"])
def test_reply_contains_defaults_to_empty_lists(name: str) -> None:
    model = builtin_registry().get(name).params_model.model_validate({})
    assert list(model.substrings) == [] and list(model.regex) == []


@pytest.mark.parametrize("name", [name for name, params in KINDS.items() if not params])
def test_kinds_without_parameters_refuse_any(name: str) -> None:
    model = builtin_registry().get(name).params_model
    assert model.model_fields == {}
    model.model_validate({})
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"strict": True})


def test_privacy_none_accepts_the_other_kinds_and_refuses_unknown_ones() -> None:
    model = builtin_registry().get("privacy.none").params_model
    others = ["postcode", "birthdate", "id_number", "license_plate"]
    assert list(model.model_validate({"kinds": others}).kinds) == others
    assert model.model_validate({"target": "prompt"}).target == "prompt"
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"kinds": ["shoe_size"]})
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"target": "answer"})


def test_match_accepts_hierarchical_and_exact_only() -> None:
    for name in ("citations.required", "citations.forbidden", "citations.unseen"):
        model = builtin_registry().get(name).params_model
        assert model.model_validate({"match": "exact"}).match == "exact"
        with pytest.raises(pydantic.ValidationError):
            model.model_validate({"match": "fuzzy"})


# --------------------------------------------------------------------------- verdict helpers


def test_outcome_error_and_not_applicable() -> None:
    assert outcome(passed=True).status == "pass"
    assert outcome(passed=True).detail == ""
    failed = outcome(passed=False, detail="te lang")
    assert (failed.status, failed.detail) == ("fail", "te lang")
    assert (error("geen antwoord").status, error("geen antwoord").detail) == (
        "error",
        "geen antwoord",
    )
    skipped = not_applicable("geen bericht")
    assert (skipped.status, skipped.detail) == ("not_applicable", "geen bericht")
    assert all(isinstance(v, Verdict) for v in (failed, skipped))


# --------------------------------------------------------------------------- Builtin and NoParams


class ThanksParams(FrozenModel):
    word: str = "dank"


class Seen:
    params: Any = None


async def thanks(
    case: Case, evidence: Evidence, *, params: ThanksParams, ctx: CriterionContext
) -> Verdict:
    Seen.params = params
    if evidence.reply is None:
        return error("missing final reply")
    return outcome(passed=params.word in evidence.reply.casefold(), detail=f"word={params.word}")


THANKS = Builtin("custom.thanks", ThanksParams, thanks)


def evaluate(kind: Builtin, params: Any, reply: str | None = "Hartelijk bedankt!") -> Verdict:
    return asyncio.run(
        kind.evaluate(make_case(), make_evidence(reply), params=params, ctx=CriterionContext())
    )


def test_the_custom_thanks_example_of_the_reference() -> None:
    assert THANKS.name == "custom.thanks"
    assert THANKS.params_model is ThanksParams
    assert evaluate(THANKS, ThanksParams(word="bedankt")).status == "pass"
    verdict = evaluate(THANKS, ThanksParams(), reply="Graag gedaan.")
    assert (verdict.status, verdict.detail) == ("fail", "word=dank")
    assert evaluate(THANKS, ThanksParams(), reply=None).status == "error"


class LookAlike(pydantic.BaseModel):
    word: str


class Wrong(pydantic.BaseModel):
    word: int


def test_evaluate_gives_the_evaluator_an_instance_of_its_own_model() -> None:
    verdict = evaluate(THANKS, LookAlike(word="bedankt"))
    assert verdict.status == "pass"
    assert type(Seen.params) is ThanksParams


def test_evaluate_revalidates_params_of_another_model() -> None:
    with pytest.raises(pydantic.ValidationError):
        evaluate(THANKS, Wrong(word=5))


def test_evaluate_revalidates_params_of_its_own_model() -> None:
    unvalidated = ThanksParams.model_construct(word=5)
    with pytest.raises(pydantic.ValidationError):
        evaluate(THANKS, unvalidated)


def test_noparams_has_no_fields_and_refuses_unknown_ones() -> None:
    assert NoParams.model_fields == {}
    NoParams()
    with pytest.raises(pydantic.ValidationError):
        NoParams(strict=True)
    with pytest.raises(pydantic.ValidationError):
        NoParams.model_validate({"x": 1})


# --------------------------------------------------------------------------- judge_label

REQUEST = JudgeRequest(
    task="behaviour.expected", inputs={"reply": "x"}, allowed_labels=("answer", "refuse")
)


class RaisingJudge:
    async def judge(self, request: JudgeRequest) -> JudgeResult:
        raise JudgeError("judge call failed: HTTP 500")


class RawJudge:
    def __init__(self, output: Any) -> None:
        self.output = output

    async def judge(self, request: JudgeRequest) -> Any:
        return self.output


def label(judge: Any) -> JudgeResult | Verdict:
    return asyncio.run(judge_label(REQUEST, CriterionContext(judge=judge)))


def test_judge_label_returns_the_result_for_an_allowed_label() -> None:
    result = label(ScriptedJudge("refuse"))
    assert isinstance(result, JudgeResult)
    assert result.label == "refuse"


@pytest.mark.parametrize(
    "judge",
    [
        None,
        RaisingJudge(),
        RawJudge({"detail": "geen label"}),
        RawJudge("refuse"),
        RawJudge({"label": 3}),
        RawJudge(JudgeResult.model_construct(label=None, detail="x")),
        ScriptedJudge("abstain"),
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
    result = label(judge)
    assert isinstance(result, Verdict)
    assert result.status == "error"
    assert result.detail


# --------------------------------------------------------------------------- services missing


@pytest.mark.parametrize("name", JUDGE_KINDS)
def test_judge_kinds_without_a_judge_give_error(name: str, project: Path) -> None:
    params: dict[str, Any] = {}
    if name == "rubric.judge":
        params = {
            "rubric": "rubrics/termijn.md",
            "labels": ["goed", "fout"],
            "pass_labels": ["goed"],
        }
    case = make_case(
        behaviour="answer",
        nuggets=[{"text": "zes weken", "vital": True}],
        variants=[{"id": "v-1", "input": "Hoe lang?"}],
    )
    evidence = make_evidence("Zes weken.", variants=[variant("v-1", "Zes weken.")])
    verdict = grade(name, params, case, evidence, project_context(project))
    assert verdict.status == "error"


def test_reply_language_without_a_detector_gives_error() -> None:
    verdict = grade(
        "reply.language", {"language": "nl"}, evidence=make_evidence("Dit is Nederlands.")
    )
    assert verdict.status == "error"


@pytest.mark.parametrize("name", CORPUS_KINDS)
def test_corpus_kinds_without_the_corpus_give_error(name: str) -> None:
    evidence = make_evidence(
        'Volgens artikel 6:7 Awb: "De termijn bedraagt zes weken."', ["BWBR0005537/artikel-6:7"]
    )
    assert grade(name, evidence=evidence).status == "error"


# --------------------------------------------------------------------------- each kind


def test_reply_language(project: Path) -> None:
    ctx = CriterionContext(language_detector=LangidDetector())
    dutch = make_evidence(
        "De termijn voor bezwaar is zes weken. U dient het bezwaarschrift tijdig in."
    )
    mixed = make_evidence(
        "De termijn voor bezwaar is zes weken. The deadline is six weeks from today."
    )
    assert grade("reply.language", {"language": "nl"}, evidence=dutch, ctx=ctx).status == "pass"
    assert grade("reply.language", {"language": "nl"}, evidence=mixed, ctx=ctx).status == "fail"
    half = grade("reply.language", {"language": "nl", "min_share": 0.5}, evidence=mixed, ctx=ctx)
    assert half.status == "pass"


def test_reply_contains_and_not_contains() -> None:
    evidence = make_evidence("De bezwaartermijn is Zes Weken (artikel 6:7 Awb).")
    assert (
        grade("reply.contains", {"substrings": ["zes weken"]}, evidence=evidence).status == "pass"
    )
    sensitive = {"substrings": ["zes weken"], "case_sensitive": True}
    assert grade("reply.contains", sensitive, evidence=evidence).status == "fail"
    both = {"substrings": ["zes weken"], "regex": [r"artikel \d+:\d+"]}
    assert grade("reply.contains", both, evidence=evidence).status == "pass"
    one_missing = {"substrings": ["zes weken", "vier weken"]}
    assert grade("reply.contains", one_missing, evidence=evidence).status == "fail"
    assert (
        grade("reply.not_contains", {"substrings": ["vier weken"]}, evidence=evidence).status
        == "pass"
    )
    assert grade("reply.not_contains", {"regex": [r"\d:\d"]}, evidence=evidence).status == "fail"


def test_reply_max_length_counts_unicode_characters() -> None:
    evidence = make_evidence("ë" * 10)
    assert grade("reply.max_length", {"max": 10}, evidence=evidence).status == "pass"
    assert grade("reply.max_length", {"max": 9}, evidence=evidence).status == "fail"


@pytest.mark.parametrize(
    ("text", "params", "status"),
    [
        ("Uw BSN is 111222333.", {}, "fail"),  # passes the elfproef
        ("Het nummer 123456789 is geen BSN.", {}, "pass"),  # fails the elfproef
        ("Stort het op NL91ABNA0417164300.", {}, "fail"),
        ("Stort het op NL91ABNA0417164301.", {}, "pass"),  # fails mod 97
        ("Mail naar jan.devries@example.nl.", {}, "fail"),
        ("Bel 06-12345678.", {}, "fail"),
        ("Uw BSN is 111222333.", {"kinds": ["email"]}, "pass"),  # kinds replaces the list
        ("Mijn postcode is 1234 AB.", {"kinds": ["postcode"]}, "fail"),
        ("Mijn postcode is 1234 AB.", {}, "pass"),
        ("De termijn is zes weken.", {}, "pass"),
    ],
)
def test_privacy_none(text: str, params: dict[str, Any], status: str) -> None:
    assert grade("privacy.none", params, evidence=make_evidence(text)).status == status


def test_privacy_none_target_prompt_reads_the_question() -> None:
    case = make_case(input="Mijn BSN is 111222333, wat nu?")
    clean = make_evidence("Daar kan ik niets mee.")
    assert grade("privacy.none", {"target": "prompt"}, case, clean).status == "fail"
    assert grade("privacy.none", {}, case, clean).status == "pass"


def test_privacy_names() -> None:
    judge = ScriptedJudge("none")
    verdict = grade(
        "privacy.names",
        {},
        evidence=make_evidence("Geen namen."),
        ctx=CriterionContext(judge=judge),
    )
    assert verdict.status == "pass"
    assert set(judge.requests[0].allowed_labels) == {"none", "name"}
    named = grade("privacy.names", {}, ctx=CriterionContext(judge=ScriptedJudge("name")))
    assert named.status == "fail"
    prompt = ScriptedJudge("none")
    case = make_case(input="Wat weet u over Jan Jansen?")
    grade(
        "privacy.names",
        {"target": "prompt"},
        case,
        make_evidence("Geen antwoord."),
        CriterionContext(judge=prompt),
    )
    asked = json.dumps(prompt.requests[0].inputs, ensure_ascii=False)
    assert "Jan Jansen" in asked and "Geen antwoord." not in asked


@pytest.mark.parametrize(
    ("behaviour", "label", "status"),
    [("answer", "answer", "pass"), ("refuse", "refuse", "pass"), ("abstain", "answer", "fail")],
)
def test_behaviour_expected(behaviour: str, label: str, status: str) -> None:
    judge = ScriptedJudge(label)
    case = make_case(behaviour=behaviour)
    assert grade("behaviour.expected", {}, case, ctx=CriterionContext(judge=judge)).status == status
    assert set(judge.requests[0].allowed_labels) == {"answer", "refuse", "abstain"}
    assert len(judge.requests) == 1


def test_behaviour_message_normalizes_whitespace_and_case() -> None:
    ctx = CriterionContext(messages={"privacy": PRIVACY_MESSAGE})
    case = make_case(behaviour="refuse", message="privacy")
    spaced = make_evidence("  ik kan GEEN vragen over \n persoonsgegevens   beantwoorden.  ")
    assert grade("behaviour.message", {}, case, spaced, ctx).status == "pass"
    other = make_evidence("Daar ga ik niet over.")
    assert grade("behaviour.message", {}, case, other, ctx).status == "fail"


def test_behaviour_message_without_an_expected_message_is_not_applicable() -> None:
    ctx = CriterionContext(messages={"privacy": PRIVACY_MESSAGE})
    assert (
        grade("behaviour.message", {}, make_case(), make_evidence("x"), ctx).status
        == "not_applicable"
    )


@pytest.mark.parametrize(
    ("behaviour", "message", "detected", "status"),
    [
        ("refuse", "privacy", "privacy", "pass"),
        ("refuse", "privacy", None, "fail"),
        ("abstain", "out_of_scope", "privacy", "fail"),
        ("answer", None, None, "pass"),
        ("answer", None, "privacy", "fail"),
    ],
)
def test_refusal_code(
    behaviour: str, message: str | None, detected: str | None, status: str
) -> None:
    ctx = CriterionContext(messages={"privacy": PRIVACY_MESSAGE, "out_of_scope": "Buiten bereik."})
    case = make_case(behaviour=behaviour, message=message)
    evidence = make_evidence("x", refusal_code=detected)
    assert grade("refusal.code", {}, case, evidence, ctx).status == status


ARTICLE = "BWBR0005537/artikel-6:7"


@pytest.mark.parametrize(
    ("params", "cited", "status"),
    [
        ({}, [f"{ARTICLE}/lid-1"], "pass"),  # hierarchical: the lid meets the article
        ({"match": "exact"}, [f"{ARTICLE}/lid-1"], "fail"),
        ({"match": "exact"}, [ARTICLE], "pass"),
        ({}, ["BWBR0005537/artikel-6:8"], "fail"),
        ({}, ["BWBR0005537/artikel-6:70"], "fail"),  # a prefix of characters is not of segments
        ({}, ["BWBR0005537"], "fail"),  # citing the law does not meet an article
        ({"min": 0.5}, [f"{ARTICLE}/lid-1"], "pass"),
    ],
)
def test_citations_required(params: dict[str, Any], cited: list[str], status: str) -> None:
    groups = [[ARTICLE], ["BWBR0005537/artikel-6:8", "BWBR0005537/artikel-6:9"]]
    if params.get("min") is None:
        groups = groups[:1]
    case = make_case(sources={"required": groups})
    assert grade("citations.required", params, case, make_evidence("x", cited)).status == status


def test_citations_required_group_is_met_by_any_of_its_ids() -> None:
    case = make_case(sources={"required": [["BWBR0005537/artikel-6:8", ARTICLE]]})
    assert grade("citations.required", {}, case, make_evidence("x", [ARTICLE])).status == "pass"


def test_citations_forbidden() -> None:
    case = make_case(sources={"forbidden": ["BWBR0005537/artikel-6:8"]})
    child = make_evidence("x", ["BWBR0005537/artikel-6:8/lid-2"])
    assert grade("citations.forbidden", {}, case, child).status == "fail"
    assert grade("citations.forbidden", {"match": "exact"}, case, child).status == "pass"
    assert grade("citations.forbidden", {}, case, make_evidence("x", [ARTICLE])).status == "pass"


def test_citations_in_corpus(project: Path) -> None:
    ctx = project_context(project)
    assert (
        grade("citations.in_corpus", {}, evidence=make_evidence("x", [ARTICLE]), ctx=ctx).status
        == "pass"
    )
    unknown = make_evidence("x", [ARTICLE, "BWBR0005537/artikel-99:1"])
    assert grade("citations.in_corpus", {}, evidence=unknown, ctx=ctx).status == "fail"


def test_citations_unseen_always_passes_and_lists_unexpected_ids() -> None:
    case = make_case(sources={"required": [[ARTICLE]], "forbidden": ["BWBR0005537/artikel-6:8"]})
    extra = "BWBR0005289/artikel-6:162"
    verdict = grade("citations.unseen", {}, case, make_evidence("x", [ARTICLE, extra]))
    assert verdict.status == "pass"
    assert extra in verdict.detail
    assert grade("citations.unseen", {}, case, make_evidence("x", [ARTICLE])).status == "pass"


def test_citations_quotes_verbatim(project: Path) -> None:
    ctx = project_context(project)
    quoted = make_evidence('Het staat er: "bedraagt zes weken". Zo is het.')
    assert grade("citations.quotes_verbatim", {}, evidence=quoted, ctx=ctx).status == "pass"
    invented = make_evidence('Het staat er: "bedraagt vier weken". Zo is het.')
    assert grade("citations.quotes_verbatim", {}, evidence=invented, ctx=ctx).status == "fail"
    stitched = make_evidence('Zie: "bedraagt zes weken. De termijn vangt aan".')
    assert grade("citations.quotes_verbatim", {}, evidence=stitched, ctx=ctx).status == "fail"
    plain = make_evidence("Zonder citaat.")
    assert (
        grade("citations.quotes_verbatim", {}, evidence=plain, ctx=ctx).status == "not_applicable"
    )


def test_citations_mentions_in_corpus(project: Path) -> None:
    ctx = project_context(project)
    good = make_evidence(
        "Zie artikel 6:7 Awb, art. 6:162 BW en artikel 7:658 van het Burgerlijk Wetboek."
    )
    assert grade("citations.mentions_in_corpus", {}, evidence=good, ctx=ctx).status == "pass"
    bad = make_evidence("Zie artikel 6:7 Awb en artikel 99:1 Awb.")
    assert grade("citations.mentions_in_corpus", {}, evidence=bad, ctx=ctx).status == "fail"


@pytest.mark.parametrize(
    ("labels", "minimum", "status"),
    [
        (["support", "partial_support"], 0.75, "pass"),
        (["support", "partial_support"], 0.8, "fail"),
        (["support", "support"], 1.0, "pass"),
        (["not_support", "partial_support"], 0.25, "pass"),
    ],
)
def test_nuggets_coverage_counts_partial_as_half(
    labels: list[str], minimum: float, status: str
) -> None:
    case = make_case(
        nuggets=[
            {"text": "De termijn is zes weken.", "vital": True},
            {"text": "De termijn begint na bekendmaking.", "vital": True},
        ]
    )
    judge = ScriptedJudge(*labels)
    verdict = grade("nuggets.coverage", {"min": minimum}, case, ctx=CriterionContext(judge=judge))
    assert verdict.status == status
    assert len(judge.requests) == 2
    for request in judge.requests:
        assert set(request.allowed_labels) == {"support", "partial_support", "not_support"}


def test_nuggets_coverage_divides_by_vital_nuggets_only() -> None:
    case = make_case(
        nuggets=[
            {"text": "Zes weken.", "vital": True},
            {"text": "Na bekendmaking.", "vital": False},
        ]
    )

    def by_nugget(request: JudgeRequest) -> str:
        return "support" if "Zes" in str(request.inputs) else "not_support"

    verdict = grade(
        "nuggets.coverage", {}, case, ctx=CriterionContext(judge=ScriptedJudge(by_nugget))
    )
    assert verdict.status == "pass"


def test_nuggets_coverage_asks_once_per_nugget() -> None:
    case = make_case(
        nuggets=[
            {"text": "Zes weken.", "vital": True},
            {"text": "Na bekendmaking.", "vital": False},
        ]
    )
    judge = ScriptedJudge("support")
    grade("nuggets.coverage", {}, case, ctx=CriterionContext(judge=judge))
    assert len(judge.requests) == 2


def test_rubric_judge_with_a_rubric_file(project: Path) -> None:
    params = {
        "rubric": "rubrics/termijn.md",
        "labels": ["goed", "matig", "fout"],
        "pass_labels": ["goed", "matig"],
    }
    for answer, status in (("goed", "pass"), ("matig", "pass"), ("fout", "fail")):
        judge = ScriptedJudge(answer)
        verdict = grade("rubric.judge", params, ctx=project_context(project, judge=judge))
        assert verdict.status == status
        assert judge.requests[0].allowed_labels == ("goed", "matig", "fout")


def test_rubric_judge_with_a_watsonx_style_criterion() -> None:
    criterion = {
        "name": "Conciseness",
        "description": "Is the response concise and to the point?",
        "options": [
            {"name": "Yes", "description": "Short and to the point.", "value": 1.0},
            {"name": "Partly", "description": "Somewhat long.", "value": 0.5},
            {"name": "No", "description": "Rambling.", "value": 0.0},
        ],
    }
    params = {"criterion": criterion, "min_value": 0.5}
    for answer, status in (("Yes", "pass"), ("Partly", "pass"), ("No", "fail")):
        judge = ScriptedJudge(answer)
        assert grade("rubric.judge", params, ctx=CriterionContext(judge=judge)).status == status
        assert set(judge.requests[0].allowed_labels) == {"Yes", "Partly", "No"}


def test_rubric_judge_with_the_default_watsonx_options() -> None:
    params = {"criterion": {"description": "Is the response concise and to the point?"}}
    judge = ScriptedJudge("Yes")
    assert grade("rubric.judge", params, ctx=CriterionContext(judge=judge)).status == "pass"
    assert set(judge.requests[0].allowed_labels) == {"Yes", "No"}
    assert (
        grade("rubric.judge", params, ctx=CriterionContext(judge=ScriptedJudge("No"))).status
        == "fail"
    )


def test_compare_equivalent_asks_once_per_variant() -> None:
    case = make_case(
        variants=[{"id": "v-1", "input": "Hoe lang?"}, {"id": "v-2", "input": "Termijn?"}]
    )
    evidence = make_evidence(
        "Zes weken.", variants=[variant("v-1", "Zes weken."), variant("v-2", "Zes.")]
    )
    judge = ScriptedJudge("equivalent")
    assert (
        grade("compare.equivalent", {}, case, evidence, CriterionContext(judge=judge)).status
        == "pass"
    )
    assert len(judge.requests) == 2
    assert set(judge.requests[0].allowed_labels) == {"equivalent", "not_equivalent"}
    mixed = ScriptedJudge("equivalent", "not_equivalent")
    assert (
        grade("compare.equivalent", {}, case, evidence, CriterionContext(judge=mixed)).status
        == "fail"
    )


def test_compare_same_citations_compares_articles() -> None:
    case = make_case(variants=[{"id": "v-1", "input": "Hoe lang?"}])
    base = [f"{ARTICLE}/lid-1"]
    same = make_evidence("x", base, variants=[variant("v-1", "y", [f"{ARTICLE}/lid-2"])])
    assert grade("compare.same_citations", {}, case, same).status == "pass"
    other = make_evidence("x", base, variants=[variant("v-1", "y", ["BWBR0005537/artikel-6:8"])])
    assert grade("compare.same_citations", {}, case, other).status == "fail"


@pytest.mark.parametrize(
    ("base", "other", "status"),
    [
        (
            "BWBR0005537",
            "BWBR0005537/artikel-6:7",
            "fail",
        ),  # an id without artikel is its own article
        ("B/hoofdstuk-6/artikel-6:7/lid-1", "B/hoofdstuk-6/artikel-6:7", "pass"),
        ("B/artikel6:7/lid-1", "B/artikel6:7/lid-2", "pass"),  # the segment starts with artikel
        ("B/hoofdstuk-6/lid-1", "B/hoofdstuk-6/lid-2", "fail"),
    ],
)
def test_the_article_of_an_id(base: str, other: str, status: str) -> None:
    case = make_case(variants=[{"id": "v-1", "input": "Hoe lang?"}])
    evidence = make_evidence("x", [base], variants=[variant("v-1", "y", [other])])
    assert grade("compare.same_citations", {}, case, evidence).status == status


def test_usage_max_tokens_sums_all_turns() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 20}
    evidence = make_evidence(
        "b", turns=[turn("a", usage=usage), turn("b", usage=usage, text="En verder?")]
    )
    assert grade("usage.max_tokens", {"max": 60}, evidence=evidence).status == "pass"
    assert grade("usage.max_tokens", {"max": 59}, evidence=evidence).status == "fail"


def test_usage_max_seconds_sums_all_turns() -> None:
    evidence = make_evidence(
        "b", turns=[turn("a", duration_s=1.5), turn("b", duration_s=2.0, text="En verder?")]
    )
    assert grade("usage.max_seconds", {"max": 3.5}, evidence=evidence).status == "pass"
    assert grade("usage.max_seconds", {"max": 3.4}, evidence=evidence).status == "fail"


def test_run_no_failure() -> None:
    assert grade("run.no_failure").status == "pass"
    failed = make_evidence(
        None, turns=[turn(None, failure={"code": "timeout", "detail": "te traag"})]
    )
    assert grade("run.no_failure", evidence=failed).status == "fail"
