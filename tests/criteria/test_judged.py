"""Tests of the judge kinds of judged.py: behaviour, personal names, nuggets, variants."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from soev_pipeline.core import (
    Case,
    CriterionContext,
    Evidence,
    Judge,
    JudgeError,
    JudgeRequest,
    JudgeResult,
    VariantEvidence,
    Verdict,
)
from tests.support.builders import (
    Answer,
    ScriptedJudge,
    by_input,
    evaluate,
    grade,
    label,
    make_case,
    make_evidence,
    make_variant,
    params_error,
)
from tests.support.clock import on_virtual_clock


def ask(kind: str, case: Case, evidence: Evidence, judge: Judge | None, **params: Any) -> Verdict:
    return grade(kind, evidence, case=case, ctx=CriterionContext(judge=judge), **params)


NUGGETS = [
    {"text": "De bezwaartermijn is zes weken.", "vital": True},
    {"text": "De termijn begint na bekendmaking.", "vital": False},
    {"text": "Bezwaar maak je bij het bestuursorgaan.", "vital": True},
]
VARIANTS = [
    {"id": "kern-001-a", "input": "Hoeveel tijd heb ik voor bezwaar?"},
    {"id": "kern-001-b", "turns": ["Ik wil bezwaar maken.", "Wat is de termijn?"]},
]


def variant_evidence(replies: Mapping[str, str | None]) -> list[VariantEvidence]:
    return [make_variant(name, reply) for name, reply in replies.items()]


# One setting per kind in which the judge is asked, used by the fail-closed tests.
ASKING: dict[str, tuple[Case, Evidence]] = {
    "behaviour.expected": (make_case(), make_evidence()),
    "privacy.names": (make_case(), make_evidence()),
    "nuggets.coverage": (make_case(nuggets=NUGGETS), make_evidence()),
    "compare.equivalent": (
        make_case(variants=VARIANTS),
        make_evidence(variants=variant_evidence({"kern-001-a": "Zes.", "kern-001-b": "6 wk."})),
    ),
}
GOOD = {
    "behaviour.expected": "answer",
    "privacy.names": "none",
    "nuggets.coverage": "support",
    "compare.equivalent": "equivalent",
}
# nuggets.coverage is at 2 since it asks about every nugget, not only the vital ones.
VERSIONS = {
    "behaviour.expected": "1",
    "privacy.names": "1",
    "nuggets.coverage": "2",
    "compare.equivalent": "1",
}


class TestFailsClosed:
    @pytest.mark.parametrize("kind", sorted(ASKING))
    def test_a_good_label_passes(self, kind: str) -> None:
        case, evidence = ASKING[kind]
        verdict = ask(kind, case, evidence, ScriptedJudge(label(GOOD[kind])))
        assert verdict.status == "pass", verdict.detail

    @pytest.mark.parametrize("kind", sorted(ASKING))
    def test_without_a_judge_it_is_an_error(self, kind: str) -> None:
        case, evidence = ASKING[kind]
        verdict = ask(kind, case, evidence, None)
        assert verdict.status == "error"
        assert "no judge" in verdict.detail

    @pytest.mark.parametrize(
        "answer",
        [
            JudgeError("the model timed out"),
            label("maybe"),
            "garbage",
            {"detail": "no label at all"},
            None,
        ],
        ids=["judge-error", "label-outside-the-set", "string", "dict-without-label", "none"],
    )
    @pytest.mark.parametrize("kind", sorted(ASKING))
    def test_an_unusable_answer_is_an_error(self, kind: str, answer: Answer) -> None:
        case, evidence = ASKING[kind]
        judge = ScriptedJudge(answer)
        verdict = ask(kind, case, evidence, judge)
        assert verdict.status == "error", verdict.detail
        assert judge.requests

    @pytest.mark.parametrize("kind", sorted(ASKING))
    def test_the_verdict_records_the_judge(self, kind: str) -> None:
        case, evidence = ASKING[kind]
        verdict = ask(kind, case, evidence, ScriptedJudge(label(GOOD[kind])))
        assert (verdict.kind, verdict.version) == (kind, VERSIONS[kind])
        assert (verdict.judge_model, verdict.prompt_sha) == ("judge-m", "p" * 64)
        assert verdict.rubric_sha is None

    @pytest.mark.parametrize("kind", ["behaviour.expected", "compare.equivalent"])
    def test_parameters_are_refused(self, kind: str) -> None:
        assert "strict" in params_error(kind, strict=True)


class TestBehaviourExpected:
    def test_the_request(self) -> None:
        judge = ScriptedJudge(label("answer"))
        case = make_case(turns=["Ik heb een boete.", "Kan ik bezwaar maken?"])
        ask("behaviour.expected", case, make_evidence("Ja, binnen zes weken."), judge)
        (request,) = judge.requests
        assert request.task == "behaviour.expected"
        assert request.inputs == {
            "question": ["Ik heb een boete.", "Kan ik bezwaar maken?"],
            "reply": "Ja, binnen zes weken.",
        }
        assert request.allowed_labels == ("answer", "refuse", "abstain")

    @pytest.mark.parametrize("expected", ["answer", "refuse", "abstain"])
    def test_passes_on_the_expected_behaviour(self, expected: str) -> None:
        case = make_case(behaviour=expected)
        verdict = ask("behaviour.expected", case, make_evidence(), ScriptedJudge(label(expected)))
        assert verdict.status == "pass"

    def test_fails_on_another_behaviour(self) -> None:
        case = make_case(behaviour="refuse")
        judge = ScriptedJudge(label("answer", "The reply gives the term."))
        verdict = ask("behaviour.expected", case, make_evidence(), judge)
        assert verdict.status == "fail"
        assert "'answer'" in verdict.detail and "'refuse'" in verdict.detail
        assert "gives the term" in verdict.detail

    def test_a_missing_reply_is_an_error_without_asking(self) -> None:
        judge = ScriptedJudge(label("answer"))
        verdict = ask("behaviour.expected", make_case(), make_evidence(None), judge)
        assert verdict.status == "error"
        assert judge.requests == []


class TestPrivacyNames:
    def test_the_reply_is_the_default_target(self) -> None:
        judge = ScriptedJudge(label("none"))
        verdict = ask("privacy.names", make_case(), make_evidence("Zes weken."), judge)
        assert verdict.status == "pass"
        (request,) = judge.requests
        assert request.task == "privacy.names"
        assert request.inputs == {"text": "Zes weken."}
        assert request.allowed_labels == ("none", "name")

    def test_a_name_fails(self) -> None:
        judge = ScriptedJudge(label("name", "Jan de Vries"))
        verdict = ask("privacy.names", make_case(), make_evidence("Vraag het Jan."), judge)
        assert verdict.status == "fail"
        assert "personal name in the reply" in verdict.detail

    def test_the_prompt_target_joins_the_base_user_turns(self) -> None:
        judge = ScriptedJudge(label("name"))
        case = make_case(turns=["Ik ben Piet.", "Mag mijn buurman dat?"], variants=VARIANTS)
        verdict = ask("privacy.names", case, make_evidence(None), judge, target="prompt")
        assert verdict.status == "fail"
        (request,) = judge.requests
        assert request.inputs == {"text": "Ik ben Piet.\n\nMag mijn buurman dat?"}

    def test_a_missing_reply_is_an_error_for_the_reply_target(self) -> None:
        judge = ScriptedJudge(label("none"))
        verdict = ask("privacy.names", make_case(), make_evidence(None), judge)
        assert verdict.status == "error"
        assert judge.requests == []

    def test_an_unknown_target_is_refused_at_load(self) -> None:
        assert "target" in params_error("privacy.names", target="both")


class TestNuggetsCoverage:
    def test_one_request_per_nugget_vital_or_not(self) -> None:
        judge = ScriptedJudge(label("support"))
        case = make_case(turns=["Eerste.", "Tweede?"], nuggets=NUGGETS)
        verdict = ask("nuggets.coverage", case, make_evidence("Zes weken."), judge)
        assert verdict.status == "pass"
        assert [request.inputs for request in judge.requests] == [
            {
                "question": ["Eerste.", "Tweede?"],
                "reply": "Zes weken.",
                "nugget": "De bezwaartermijn is zes weken.",
            },
            {
                "question": ["Eerste.", "Tweede?"],
                "reply": "Zes weken.",
                "nugget": "De termijn begint na bekendmaking.",
            },
            {
                "question": ["Eerste.", "Tweede?"],
                "reply": "Zes weken.",
                "nugget": "Bezwaar maak je bij het bestuursorgaan.",
            },
        ]
        for request in judge.requests:
            assert request.task == "nuggets.coverage"
            assert request.allowed_labels == ("support", "partial_support", "not_support")

    @pytest.mark.parametrize(
        ("second", "minimum", "status"),
        [
            ("partial_support", 0.75, "pass"),
            ("partial_support", 0.8, "fail"),
            ("not_support", 0.5, "pass"),
            ("not_support", 0.6, "fail"),
        ],
    )
    def test_a_partial_nugget_counts_half(self, second: str, minimum: float, status: str) -> None:
        # The supported non-vital nugget would lift every score to at least 0.67 if it counted.
        answers = {
            "De bezwaartermijn is zes weken.": label("support"),
            "De termijn begint na bekendmaking.": label("support"),
            "Bezwaar maak je bij het bestuursorgaan.": label(second),
        }
        judge = ScriptedJudge(by_input("nugget", answers))
        case = make_case(nuggets=NUGGETS)
        verdict = ask("nuggets.coverage", case, make_evidence(), judge, min=minimum)
        assert verdict.status == status, verdict.detail

    def test_the_default_min_needs_every_vital_nugget(self) -> None:
        answers = {
            "De bezwaartermijn is zes weken.": label("support"),
            "De termijn begint na bekendmaking.": label("support"),
            "Bezwaar maak je bij het bestuursorgaan.": label("partial_support"),
        }
        judge = ScriptedJudge(by_input("nugget", answers))
        verdict = ask("nuggets.coverage", make_case(nuggets=NUGGETS), make_evidence(), judge)
        assert verdict.status == "fail"
        assert verdict.detail == (
            "coverage 0.75 of 2 vital nugget(s) (min 1.00); not supported: "
            "#3 'Bezwaar maak je bij het bestuursorgaan.' (partly); "
            "not vital, not counted: #2 support"
        )

    def test_an_unsupported_non_vital_nugget_does_not_fail_the_reply(self) -> None:
        answers = {
            "De bezwaartermijn is zes weken.": label("support"),
            "De termijn begint na bekendmaking.": label("not_support"),
            "Bezwaar maak je bij het bestuursorgaan.": label("support"),
        }
        judge = ScriptedJudge(by_input("nugget", answers))
        verdict = ask("nuggets.coverage", make_case(nuggets=NUGGETS), make_evidence(), judge)
        assert (verdict.status, verdict.detail) == (
            "pass",
            "coverage 1.00 of 2 vital nugget(s) (min 1.00); not vital, not counted: #2 not_support",
        )
        assert len(judge.requests) == 3

    def test_the_detail_shortens_long_nuggets(self) -> None:
        long = "Het bestuursorgaan beslist binnen zes weken " + "na ontvangst " * 20
        case = make_case(nuggets=[{"text": long}])
        verdict = ask(
            "nuggets.coverage", case, make_evidence(), ScriptedJudge(label("not_support"))
        )
        assert verdict.status == "fail"
        assert "…" in verdict.detail
        assert len(verdict.detail) < 150

    @pytest.mark.parametrize(
        "nuggets", [[], [{"text": "Een bijzaak.", "vital": False}]], ids=["none", "none-vital"]
    )
    def test_without_vital_nuggets_it_does_not_apply(self, nuggets: list[dict[str, Any]]) -> None:
        judge = ScriptedJudge(label("support"))
        verdict = ask("nuggets.coverage", make_case(nuggets=nuggets), make_evidence(), judge)
        assert verdict.status == "not_applicable"
        assert judge.requests == []

    def test_a_missing_reply_is_an_error(self) -> None:
        judge = ScriptedJudge(label("support"))
        verdict = ask("nuggets.coverage", make_case(nuggets=NUGGETS), make_evidence(None), judge)
        assert verdict.status == "error"
        assert judge.requests == []

    def test_one_failed_nugget_makes_the_verdict_an_error(self) -> None:
        answers: dict[str, Answer] = {
            "De bezwaartermijn is zes weken.": label("support"),
            "De termijn begint na bekendmaking.": label("support"),
            "Bezwaar maak je bij het bestuursorgaan.": JudgeError("rate limited"),
        }
        judge = ScriptedJudge(by_input("nugget", answers))
        verdict = ask("nuggets.coverage", make_case(nuggets=NUGGETS), make_evidence(), judge)
        assert verdict.status == "error"
        assert verdict.detail.startswith("nugget 3 of 3: ")
        assert "rate limited" in verdict.detail

    @pytest.mark.parametrize(
        "answer", [JudgeError("rate limited"), label("maybe")], ids=["judge-error", "bad-label"]
    )
    def test_a_failed_non_vital_nugget_also_makes_the_verdict_an_error(
        self, answer: Answer
    ) -> None:
        answers: dict[str, Answer] = {
            "De bezwaartermijn is zes weken.": label("support"),
            "De termijn begint na bekendmaking.": answer,
            "Bezwaar maak je bij het bestuursorgaan.": label("support"),
        }
        judge = ScriptedJudge(by_input("nugget", answers))
        verdict = ask("nuggets.coverage", make_case(nuggets=NUGGETS), make_evidence(), judge)
        assert verdict.status == "error"
        assert verdict.detail.startswith("nugget 2 of 3: ")

    @pytest.mark.parametrize("minimum", [-0.1, 1.5, "veel"])
    def test_min_outside_zero_to_one_is_refused(self, minimum: object) -> None:
        assert "min" in params_error("nuggets.coverage", min=minimum)

    def test_requests_go_out_together_and_answers_keep_case_order(self) -> None:
        nuggets = [{"text": f"Feit {index}."} for index in range(4)]
        arrived = asyncio.Event()

        async def gathering(request: JudgeRequest) -> JudgeResult:
            """Answers only once all four requests are in flight, the last one first.

            On the virtual clock the wait for the others ends in a timeout only when no
            other request can come.
            """
            seen = [str(asked.inputs["nugget"]) for asked in judge.requests]
            nugget = str(request.inputs["nugget"])
            if len(seen) == len(nuggets):
                arrived.set()
            await asyncio.wait_for(arrived.wait(), timeout=2)
            await asyncio.sleep(0.01 * (len(nuggets) - seen.index(nugget)))
            return label("support" if nugget == "Feit 0." else "not_support")

        judge = ScriptedJudge(gathering)
        case, ctx = make_case(nuggets=nuggets), CriterionContext(judge=judge)
        verdict = on_virtual_clock(evaluate("nuggets.coverage", case=case, ctx=ctx))
        assert verdict.status == "fail"
        assert verdict.detail.endswith("#2 'Feit 1.'; #3 'Feit 2.'; #4 'Feit 3.'")


class TestCompareEquivalent:
    def test_one_request_per_variant(self) -> None:
        judge = ScriptedJudge(label("equivalent"))
        case = make_case(variants=VARIANTS)
        replies = {"kern-001-a": "Zes weken.", "kern-001-b": "Binnen 6 weken."}
        evidence = make_evidence("De termijn is zes weken.", variants=variant_evidence(replies))
        verdict = ask("compare.equivalent", case, evidence, judge)
        assert verdict.status == "pass"
        assert verdict.detail == "all 2 variant(s) equivalent"
        base = {"question": ["Hoe lang duurt bezwaar?"], "reply": "De termijn is zes weken."}
        assert [request.inputs for request in judge.requests] == [
            base
            | {
                "variant_question": ["Hoeveel tijd heb ik voor bezwaar?"],
                "variant_reply": "Zes weken.",
            },
            base
            | {
                "variant_question": ["Ik wil bezwaar maken.", "Wat is de termijn?"],
                "variant_reply": "Binnen 6 weken.",
            },
        ]
        for request in judge.requests:
            assert request.task == "compare.equivalent"
            assert request.allowed_labels == ("equivalent", "not_equivalent")

    def test_a_variant_that_differs_fails(self) -> None:
        replies = {"kern-001-a": "Zes weken.", "kern-001-b": "Twee weken."}
        answers = {
            "Zes weken.": label("equivalent"),
            "Twee weken.": label("not_equivalent", "another term"),
        }
        judge = ScriptedJudge(by_input("variant_reply", answers))
        evidence = make_evidence(variants=variant_evidence(replies))
        verdict = ask("compare.equivalent", make_case(variants=VARIANTS), evidence, judge)
        assert verdict.status == "fail"
        assert verdict.detail == (
            "1 of 2 variant(s) equivalent; 'kern-001-b' is not equivalent: another term"
        )

    def test_a_variant_without_a_reply_fails_and_the_others_are_judged(self) -> None:
        judge = ScriptedJudge(label("equivalent"))
        replies = {"kern-001-a": None, "kern-001-b": "Zes weken."}
        evidence = make_evidence(variants=variant_evidence(replies))
        verdict = ask("compare.equivalent", make_case(variants=VARIANTS), evidence, judge)
        assert verdict.status == "fail"
        assert "'kern-001-a' gave no reply (timeout)" in verdict.detail
        assert [request.inputs["variant_reply"] for request in judge.requests] == ["Zes weken."]

    def test_without_variants_it_does_not_apply(self) -> None:
        judge = ScriptedJudge(label("equivalent"))
        verdict = ask("compare.equivalent", make_case(), make_evidence(), judge)
        assert verdict.status == "not_applicable"
        assert judge.requests == []

    def test_a_missing_base_reply_is_an_error(self) -> None:
        replies = {"kern-001-a": "Zes weken.", "kern-001-b": "Zes weken."}
        evidence = make_evidence(None, variants=variant_evidence(replies))
        judge = ScriptedJudge(label("equivalent"))
        verdict = ask("compare.equivalent", make_case(variants=VARIANTS), evidence, judge)
        assert verdict.status == "error"
        assert judge.requests == []

    def test_a_variant_absent_from_the_evidence_is_an_error(self) -> None:
        evidence = make_evidence(variants=variant_evidence({"kern-001-a": "Zes weken."}))
        judge = ScriptedJudge(label("equivalent"))
        verdict = ask("compare.equivalent", make_case(variants=VARIANTS), evidence, judge)
        assert verdict.status == "error"
        assert "'kern-001-b'" in verdict.detail

    def test_one_failed_comparison_makes_the_verdict_an_error(self) -> None:
        replies = {"kern-001-a": "Zes weken.", "kern-001-b": "Twee weken."}
        answers: dict[str, Answer] = {
            "Zes weken.": JudgeError("bad gateway"),
            "Twee weken.": label("not_equivalent"),
        }
        judge = ScriptedJudge(by_input("variant_reply", answers))
        evidence = make_evidence(variants=variant_evidence(replies))
        verdict = ask("compare.equivalent", make_case(variants=VARIANTS), evidence, judge)
        assert verdict.status == "error"
        assert verdict.detail.startswith("variant 'kern-001-a': ")


def test_an_unexpected_judge_exception_is_not_swallowed_by_a_kind() -> None:
    from soev_pipeline.criteria.judged import NuggetsParams, nuggets_coverage

    def script(request: JudgeRequest) -> Answer:
        if request.inputs["nugget"] == "Bezwaar maak je bij het bestuursorgaan.":
            return RuntimeError("defect in the judge")
        return label("support")

    ctx = CriterionContext(judge=ScriptedJudge(script))
    coro = nuggets_coverage.evaluator(
        make_case(nuggets=NUGGETS), make_evidence(), params=NuggetsParams(), ctx=ctx
    )
    with pytest.raises(RuntimeError, match="defect in the judge"):
        asyncio.run(coro)
