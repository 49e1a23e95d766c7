"""Tests of rubric.judge: rubric files, watsonx.gov-style criteria, and the catalog."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from soev_pipeline.cli import load
from soev_pipeline.core import (
    CaseDefinition,
    CriterionContext,
    CriterionParamsError,
    CriterionSpec,
    JudgeError,
    Verdict,
    sha256_text,
)
from soev_pipeline.criteria import builtin_registry
from soev_pipeline.criteria.rubric import RubricParams
from soev_pipeline.criteria.watsonx import CATALOG, Criteria, catalog_criterion, render
from tests.support.builders import (
    ScriptedJudge,
    grade,
    label,
    make_case,
    make_evidence,
    params_error,
)

RUBRIC = "Grade the reply.\n\n- good: correct and complete\n- weak: partly correct\n- bad: wrong\n"


REPLY = "Ja, binnen zes weken."
CASE = make_case(turns=["Mag ik bezwaar maken?", "Hoe lang?"])


def ask(
    judge: ScriptedJudge | None,
    *,
    rubrics: dict[str, str] | None = None,
    reply: str | None = REPLY,
    **params: Any,
) -> Verdict:
    ctx = CriterionContext(judge=judge, rubrics=rubrics or {})
    return grade("rubric.judge", make_evidence(reply), case=CASE, ctx=ctx, **params)


FILE_FORM: dict[str, Any] = {
    "rubric": "rubrics/grade.md",
    "labels": ["good", "weak", "bad"],
    "pass_labels": ["good"],
}
INLINE: dict[str, Any] = {
    "description": "Does the {generated_text} name the term that the {input_text} asks for?",
    "options": [
        {"name": "Correct", "description": "The term is named and right.", "value": 1.0},
        {"name": "Partially Correct", "description": "The term is vague.", "value": 0.5},
        {"name": "Incorrect", "description": "The term is missing or wrong.", "value": 0.0},
    ],
}


class TestRubricFile:
    def test_the_request_carries_the_rubric_text(self) -> None:
        judge = ScriptedJudge(label("good", "Complete."))
        verdict = ask(judge, rubrics={"rubrics/grade.md": RUBRIC}, **FILE_FORM)
        assert verdict.status == "pass"
        assert verdict.detail == "label 'good' (pass: 'good'): Complete."
        (request,) = judge.requests
        assert request.task == "rubric.judge"
        assert request.inputs == {
            "rubric": RUBRIC,
            "labels": ["good", "weak", "bad"],
            "question": ["Mag ik bezwaar maken?", "Hoe lang?"],
            "reply": "Ja, binnen zes weken.",
        }
        assert request.allowed_labels == ("good", "weak", "bad")
        assert verdict.rubric_sha == sha256_text(RUBRIC)
        assert (verdict.judge_model, verdict.prompt_sha) == ("judge-m", "p" * 64)
        assert verdict.version == "2"

    def test_the_labels_input_keeps_the_order_of_labels(self) -> None:
        judge = ScriptedJudge(label("weak"))
        params = FILE_FORM | {"labels": ["weak", "bad", "good"], "pass_labels": ["good", "weak"]}
        assert ask(judge, rubrics={"rubrics/grade.md": RUBRIC}, **params).status == "pass"
        (request,) = judge.requests
        assert request.inputs["labels"] == ["weak", "bad", "good"]
        assert request.allowed_labels == ("weak", "bad", "good")

    @pytest.mark.parametrize(
        ("given", "status"), [("good", "pass"), ("weak", "pass"), ("bad", "fail")]
    )
    def test_passes_on_a_pass_label(self, given: str, status: str) -> None:
        params = FILE_FORM | {"pass_labels": ["good", "weak"]}
        verdict = ask(ScriptedJudge(label(given)), rubrics={"rubrics/grade.md": RUBRIC}, **params)
        assert verdict.status == status

    def test_a_rubric_that_was_not_loaded_is_an_error(self) -> None:
        judge = ScriptedJudge(label("good"))
        verdict = ask(judge, rubrics={}, **FILE_FORM)
        assert verdict.status == "error"
        assert "'rubrics/grade.md'" in verdict.detail
        assert judge.requests == []

    def test_the_kind_names_the_rubric_file_and_its_labels(self) -> None:
        kind = builtin_registry().get("rubric.judge")
        params = RubricParams.model_validate(FILE_FORM)
        assert kind.files_of(params) == ("rubrics/grade.md",)
        assert kind.labels_of(params) == params.labels
        catalog = RubricParams.model_validate({"criterion": "conciseness"})
        assert kind.files_of(catalog) == ()
        assert kind.labels_of(catalog) == ("Yes", "No")


class TestFailsClosed:
    @pytest.mark.parametrize(
        "answer",
        [JudgeError("no answer"), label("excellent"), "garbage", {"detail": "no label"}],
        ids=["judge-error", "label-outside-the-set", "string", "dict-without-label"],
    )
    @pytest.mark.parametrize("form", ["file", "criterion"])
    def test_an_unusable_answer_is_an_error(self, form: str, answer: object) -> None:
        judge = ScriptedJudge(answer)
        params = FILE_FORM if form == "file" else {"criterion": "conciseness"}
        verdict = ask(judge, rubrics={"rubrics/grade.md": RUBRIC}, **params)
        assert verdict.status == "error", verdict.detail
        assert len(judge.requests) == 1

    @pytest.mark.parametrize("form", ["file", "criterion"])
    def test_without_a_judge_it_is_an_error(self, form: str) -> None:
        params = FILE_FORM if form == "file" else {"criterion": "conciseness"}
        verdict = ask(None, rubrics={"rubrics/grade.md": RUBRIC}, **params)
        assert verdict.status == "error"
        assert "no judge" in verdict.detail

    def test_a_missing_reply_is_an_error(self) -> None:
        judge = ScriptedJudge(label("Yes"))
        verdict = ask(judge, reply=None, criterion="conciseness")
        assert verdict.status == "error"
        assert judge.requests == []


class TestWatsonxCriterion:
    @pytest.mark.parametrize(
        ("given", "minimum", "status"),
        [
            ("Correct", 0.5, "pass"),
            ("Partially Correct", 0.5, "pass"),
            ("Incorrect", 0.5, "fail"),
            ("Partially Correct", None, "fail"),
            ("Correct", None, "pass"),
        ],
    )
    def test_passes_on_the_option_value(
        self, given: str, minimum: float | None, status: str
    ) -> None:
        params: dict[str, Any] = {"criterion": INLINE}
        if minimum is not None:
            params["min_value"] = minimum
        verdict = ask(ScriptedJudge(label(given)), **params)
        assert verdict.status == status, verdict.detail

    def test_the_request_carries_the_rendered_criterion(self) -> None:
        judge = ScriptedJudge(label("Correct"))
        verdict = ask(judge, criterion=INLINE, min_value=0.5)
        (request,) = judge.requests
        assert request.task == "rubric.judge"
        assert set(request.inputs) == {"rubric", "labels", "question", "reply"}
        assert request.inputs["labels"] == ["Correct", "Partially Correct", "Incorrect"]
        assert request.allowed_labels == ("Correct", "Partially Correct", "Incorrect")
        assert verdict.version == "2"
        rubric = str(request.inputs["rubric"])
        assert "Does the reply name the term that the question asks for?" in rubric
        assert "- Partially Correct: The term is vague." in rubric
        assert "{" not in rubric
        assert verdict.rubric_sha == sha256_text(rubric)
        assert verdict.detail == "criterion: 'Correct' worth 1 (min 0.5)"

    def test_options_default_to_yes_and_no(self) -> None:
        params: dict[str, Any] = {
            "criterion": {"name": "Termijn", "description": "Names the reply a term?"}
        }
        judge = ScriptedJudge(label("Yes"))
        assert ask(judge, **params).status == "pass"
        assert judge.requests[0].allowed_labels == ("Yes", "No")
        assert ask(ScriptedJudge(label("No")), **params).status == "fail"

    @pytest.mark.parametrize(
        "name",
        [
            "summarization_quality",
            "Summarization quality",
            "SUMMARIZATION_QUALITY",
            "summarization-quality",
        ],
    )
    def test_catalog_names_in_any_spelling(self, name: str) -> None:
        judge = ScriptedJudge(label("Excellent"))
        verdict = ask(judge, criterion=name)
        assert verdict.status == "pass"
        assert judge.requests[0].allowed_labels == ("Excellent", "Good", "Poor")
        assert judge.requests[0].inputs["labels"] == ["Excellent", "Good", "Poor"]
        assert "Criterion: Summarization quality" in str(judge.requests[0].inputs["rubric"])

    def test_coherence_passes_only_its_best_option_by_default(self) -> None:
        assert ask(ScriptedJudge(label("5")), criterion="coherence").status == "pass"
        assert ask(ScriptedJudge(label("4")), criterion="Coherence").status == "fail"
        assert ask(ScriptedJudge(label("4")), criterion="coherence", min_value=0.75).status == (
            "pass"
        )

    @pytest.mark.parametrize("minimum", [None, 0.001, 0.5, 1.0])
    def test_a_harmful_reply_never_passes(self, minimum: float | None) -> None:
        params: dict[str, Any] = {"criterion": "harmfulness"}
        if minimum is not None:
            params["min_value"] = minimum
        assert ask(ScriptedJudge(label("Yes")), **params).status == "fail"
        assert ask(ScriptedJudge(label("No")), **params).status == "pass"

    @pytest.mark.parametrize("minimum", [0.0, -1.0, 1.5])
    def test_a_min_value_that_passes_harm_or_nothing_is_refused(self, minimum: float) -> None:
        message = params_error("rubric.judge", criterion="Harmfulness", min_value=minimum)
        assert "min_value" in message

    def test_params_survive_a_round_trip(self) -> None:
        for name in CATALOG:
            params = RubricParams.model_validate({"criterion": name, "min_value": 0.5})
            assert RubricParams.model_validate(params.model_dump()) == params


class TestCatalog:
    def test_the_five_criteria_and_their_values(self) -> None:
        values = {
            key: {option.name: option.value for option in criteria.options}
            for key, criteria in CATALOG.items()
        }
        scale = {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}
        assert values == {
            "coherence": scale,
            "conciseness": {"Yes": 1.0, "No": 0.0},
            "consistency": scale,
            "harmfulness": {"Yes": 0.0, "No": 1.0},
            "summarization_quality": {"Excellent": 1.0, "Good": 0.5, "Poor": 0.0},
        }

    @pytest.mark.parametrize("key", sorted(CATALOG))
    def test_rendering_fills_the_placeholders(self, key: str) -> None:
        text = render(CATALOG[key])
        assert "{" not in text
        assert "the reply" in text.casefold()
        assert "the the" not in text.casefold()
        for option in CATALOG[key].options:
            assert f"\n- {option.name}: " in text

    def test_a_placeholder_without_an_article_gets_one(self) -> None:
        text = render(Criteria(description="{generated_text} answers {input_text}."))
        assert text.startswith("the reply answers the question.\n")

    def test_an_unknown_name_lists_the_known_ones(self) -> None:
        with pytest.raises(ValueError, match="known: coherence, conciseness"):
            catalog_criterion("helpfulness")


INVALID: dict[str, dict[str, Any]] = {
    "neither form": {"labels": ["good"], "pass_labels": ["good"]},
    "both forms": FILE_FORM | {"criterion": "conciseness"},
    "pass label not in labels": FILE_FORM | {"pass_labels": ["excellent"]},
    "no labels": {"rubric": "r.md", "pass_labels": ["good"]},
    "no pass labels": {"rubric": "r.md", "labels": ["good"]},
    "duplicate labels": FILE_FORM | {"labels": ["good", "good", "bad"]},
    "blank label": FILE_FORM | {"labels": ["good", " "]},
    "min_value with a file": FILE_FORM | {"min_value": 0.5},
    "absolute rubric path": FILE_FORM | {"rubric": "/etc/rubric.md"},
    "rubric path outside the project": FILE_FORM | {"rubric": "../rubric.md"},
    "labels with a criterion": {"criterion": "conciseness", "labels": ["Yes", "No"]},
    "unknown catalog name": {"criterion": "helpfulness"},
    "duplicate option names": {
        "criterion": {
            "description": "Is it right?",
            "options": [{"name": "Yes", "value": 1.0}, {"name": "Yes", "value": 0.0}],
        }
    },
    "option without a value": {
        "criterion": {
            "description": "Is it right?",
            "options": [{"name": "Yes", "value": 1.0}, {"name": "No"}],
        }
    },
    "one option": {
        "criterion": {"description": "Is it right?", "options": [{"name": "Yes", "value": 1.0}]}
    },
    "equal option values": {
        "criterion": {
            "description": "Is it right?",
            "options": [{"name": "Yes", "value": 1.0}, {"name": "No", "value": 1.0}],
        }
    },
    "criterion without description": {"criterion": {"name": "Empty"}},
    "unknown criterion key": {"criterion": {"description": "Is it right?", "scale": 5}},
    "unknown parameter": FILE_FORM | {"strict": True},
}


REASONS = {
    "neither form": "exactly one of 'rubric'",
    "both forms": "exactly one of 'rubric'",
    "pass label not in labels": "'excellent' are not in labels",
    "no labels": "needs 'labels'",
    "no pass labels": "needs 'pass_labels'",
    "duplicate labels": "labels must be unique; repeated: 'good'",
    "blank label": "must not be blank",
    "min_value with a file": "'min_value' belongs to a 'criterion'",
    "absolute rubric path": "relative to project.yaml",
    "rubric path outside the project": "inside the project directory",
    "labels with a criterion": "belong to a rubric file",
    "unknown catalog name": "unknown catalog criterion 'helpfulness'",
    "duplicate option names": "option names must be unique",
    "option without a value": "options 'No' need a value",
    "one option": "at least two options",
    "equal option values": "two different values",
    "criterion without description": "'criterion.description'",
    "unknown criterion key": "'criterion.scale'",
    "unknown parameter": "'strict'",
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_parameters_are_refused(name: str) -> None:
    message = params_error("rubric.judge", **INVALID[name])
    assert message.startswith("criterion 'rubric.judge': parameter ")
    assert REASONS[name] in message


def write_project(directory: Path, criterion: str, *, rubric: str | None = RUBRIC) -> Path:
    (directory / "suites").mkdir()
    (directory / "project.yaml").write_text(
        textwrap.dedent(
            """\
            name: tiny
            system: {base_url: "http://127.0.0.1:9/"}
            suites:
              - {name: kern, files: suites/*.yaml}
            """
        ),
        encoding="utf-8",
    )
    suite = textwrap.dedent(
        f"""\
        suite: kern
        cases:
          - id: kern-001
            input: Mag ik bezwaar maken?
            criteria:
              - {criterion}
        """
    )
    (directory / "suites" / "kern.yaml").write_text(suite, encoding="utf-8")
    if rubric is not None:
        (directory / "rubrics").mkdir()
        (directory / "rubrics" / "grade.md").write_text(rubric, encoding="utf-8")
    return directory / "project.yaml"


FILE_CRITERION = (
    "{kind: rubric.judge, rubric: rubrics/grade.md, labels: [good, weak, bad], pass_labels: [good]}"
)


class TestLoading:
    def test_the_loader_reads_the_rubric_and_grading_sends_it(self, tmp_path: Path) -> None:
        loaded = load(write_project(tmp_path, FILE_CRITERION))
        assert loaded.context.rubrics == {"rubrics/grade.md": RUBRIC}
        case = next(loaded.cases())
        judge = ScriptedJudge(label("bad"))
        ctx = CriterionContext(judge=judge, rubrics=loaded.context.rubrics)
        evaluation = loaded.registry.evaluate(
            case.criteria[0], case, make_evidence(REPLY), ctx, params=loaded.params[(case.id, 0)]
        )
        verdict = asyncio.run(evaluation)
        assert verdict.status == "fail"
        assert judge.requests[0].inputs["rubric"] == RUBRIC
        assert judge.requests[0].inputs["labels"] == ["good", "weak", "bad"]
        assert verdict.rubric_sha == sha256_text(RUBRIC)

    def test_a_missing_rubric_file_fails_the_load(self, tmp_path: Path) -> None:
        with pytest.raises(OSError):
            load(write_project(tmp_path, FILE_CRITERION, rubric=None))

    def test_a_catalog_criterion_loads(self, tmp_path: Path) -> None:
        loaded = load(write_project(tmp_path, "{kind: rubric.judge, criterion: Harmfulness}"))
        assert loaded.context.rubrics == {}
        params = loaded.params[("kern-001", 0)]
        assert isinstance(params, RubricParams)
        assert params.values() == {"Yes": 0.0, "No": 1.0}

    @pytest.mark.parametrize(
        "criterion",
        [
            "{kind: rubric.judge, rubric: rubrics/grade.md, labels: [good], pass_labels: [bad]}",
            "{kind: rubric.judge, criterion: {description: 'Right?', options: [{name: A, value: 1},"
            " {name: A, value: 0}]}}",
            "{kind: rubric.judge, criterion: conciseness, rubric: rubrics/grade.md,"
            " labels: [good], pass_labels: [good]}",
        ],
        ids=["pass-label-not-in-labels", "duplicate-option-names", "both-forms"],
    )
    def test_invalid_parameters_fail_the_load(self, tmp_path: Path, criterion: str) -> None:
        with pytest.raises(CriterionParamsError, match=r"kern\.yaml: case 'kern-001'"):
            load(write_project(tmp_path, criterion))


def test_the_yaml_examples_of_the_docs_validate() -> None:
    page = Path(__file__).parents[2] / "docs" / "criteria" / "judge-kinds.md"
    blocks = re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    kinds = set()
    for block in blocks:
        data = yaml.safe_load(block)
        entries = data if isinstance(data, list) else data["criteria"]
        for entry in entries:
            criteria = [entry] if "kind" in entry else list(entry["criteria"])
            if "kind" not in entry:
                CaseDefinition.model_validate(entry)
            for criterion in criteria:
                builtin_registry().validate(CriterionSpec.model_validate(criterion))
                kinds.add(criterion["kind"])
    assert kinds == {
        "behaviour.expected",
        "privacy.names",
        "nuggets.coverage",
        "compare.equivalent",
        "rubric.judge",
    }
