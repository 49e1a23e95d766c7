"""builtin_registry: the kinds of the criteria reference with their parameters, defaults and
needs, and what every built-in kind must say about itself.

The tests over every kind are parametrized by the registry, so a new kind is in them as
soon as it is registered; the reference's own facts are checked for the kinds it names.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from soev_pipeline.core import CriterionContext, CriterionSpec, JudgeRequest
from soev_pipeline.criteria import NEEDS, Builtin, builtin_registry
from soev_pipeline.judges import load_prompts
from tests.support.builders import ScriptedJudge, grade, label

REQUIRED = object()
ANY = object()
"""A parameter without a default that the reference states."""

REFERENCE: dict[str, dict[str, Any]] = {
    "reply.language": {"language": REQUIRED, "min_share": 1.0},
    "reply.contains": {"substrings": [], "regex": [], "case_sensitive": False},
    "reply.not_contains": {"substrings": [], "regex": [], "case_sensitive": False},
    "reply.max_length": {"max": REQUIRED},
    "privacy.none": {"target": "reply", "kinds": ["bsn", "iban", "email", "nl_phone"]},
    "privacy.names": {"target": ANY},
    "behaviour.expected": {},
    "behaviour.message": {},
    "refusal.code": {},
    "citations.required": {"match": "hierarchical", "min": 1.0},
    "citations.forbidden": {"match": ANY},
    "citations.in_corpus": {},
    "citations.unseen": {"match": ANY},
    "citations.quotes_verbatim": {},
    "citations.mentions_in_corpus": {},
    "nuggets.coverage": {"min": 1.0},
    "rubric.judge": {"rubric": ANY, "labels": ANY, "pass_labels": ANY},
    "compare.equivalent": {},
    "compare.same_citations": {},
    "usage.max_tokens": {"max": REQUIRED},
    "usage.max_seconds": {"max": REQUIRED},
    "run.no_failure": {},
}
"""The built-in kinds of the criteria reference, with their parameters and defaults."""
REFERENCE_NEEDS: dict[str, set[str]] = {
    "judge": {
        "behaviour.expected",
        "privacy.names",
        "nuggets.coverage",
        "rubric.judge",
        "compare.equivalent",
    },
    "language_detector": {"reply.language"},
    "corpus": {"citations.in_corpus", "citations.quotes_verbatim", "citations.mentions_in_corpus"},
}
"""The kinds that the reference says need a judge, a language detector or the corpus data."""
KINDS = list(builtin_registry())


def _kind(name: str) -> Builtin[Any]:
    kind = builtin_registry().get(name)
    assert isinstance(kind, Builtin)
    return kind


def test_builtin_registry_has_the_kinds_of_the_reference_and_a_new_registry_each_call() -> None:
    registry = builtin_registry()
    assert set(registry) >= set(REFERENCE)
    assert builtin_registry() is not registry


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_each_kind_has_the_parameters_and_defaults_of_the_reference(name: str) -> None:
    kind = _kind(name)
    assert kind.name == name
    fields = kind.params_model.model_fields
    if name == "rubric.judge":
        assert set(REFERENCE[name]) <= set(fields)  # and `criterion` (docs/criteria/judge-kinds.md)
    else:
        assert set(fields) == set(REFERENCE[name])
    model = builtin_registry().validate(CriterionSpec.model_validate(kind.example))
    for field, default in REFERENCE[name].items():
        if default is REQUIRED:
            assert fields[field].is_required(), field
        elif default is not ANY and field not in kind.example:
            value = getattr(model, field)
            assert (list(value) if isinstance(default, list) else value) == default, field


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_each_kind_needs_what_the_reference_says(name: str) -> None:
    said = {need for need, kinds in REFERENCE_NEEDS.items() if name in kinds}
    assert _kind(name).needs == said
    assert _kind(name).needs_judge == ("judge" in said)


@pytest.mark.parametrize("name", KINDS)
def test_each_kind_describes_itself(name: str) -> None:
    kind = _kind(name)
    assert kind.needs <= NEEDS
    assert kind.version
    assert kind.summary.strip() and "\n" not in kind.summary and len(kind.summary) <= 200
    assert kind.example["kind"] == name


@pytest.mark.parametrize("name", KINDS)
def test_each_example_validates_against_its_kind(name: str) -> None:
    kind = _kind(name)
    spec = CriterionSpec.model_validate(kind.example)
    assert isinstance(builtin_registry().validate(spec), kind.params_model)


@pytest.mark.parametrize("name", KINDS)
def test_each_kind_refuses_an_unknown_parameter(name: str) -> None:
    kind = _kind(name)
    given = CriterionSpec.model_validate(kind.example).params
    with pytest.raises(pydantic.ValidationError):
        kind.params_model.model_validate({**given, "onbekend": 1})


@pytest.mark.parametrize(
    "name", [name for name in KINDS if "match" in _kind(name).params_model.model_fields]
)
def test_match_is_hierarchical_or_exact(name: str) -> None:
    model = _kind(name).params_model
    assert model.model_validate({"match": "exact"}).match == "exact"
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"match": "fuzzy"})


def test_a_worker_may_grade_every_kind_of_the_reference_but_the_judges() -> None:
    registry, reference, judges = builtin_registry(), set(REFERENCE), REFERENCE_NEEDS["judge"]
    assert registry.forkable(detector_forks=True) & reference == reference - judges
    without = reference - judges - {"reply.language"}
    assert registry.forkable(detector_forks=False) & reference == without


REFERENCE_LABELS = {
    "behaviour.expected": ("answer", "refuse", "abstain"),
    "privacy.names": ("none", "name"),
}
"""The labels of the kinds that the reference says the judge labels once an attempt."""


def test_the_kinds_the_judge_labels_once_an_attempt_have_the_labels_of_the_reference() -> None:
    registry = builtin_registry()
    labelled = {name for name in registry if registry.get(name).labelled}
    assert labelled & set(REFERENCE) == {*REFERENCE_LABELS, "rubric.judge"}
    for name, labels in REFERENCE_LABELS.items():
        assert registry.get(name).labels == labels


@pytest.mark.parametrize("name", [name for name in KINDS if _kind(name).labelled])
def test_the_labels_of_a_kind_are_the_labels_its_judge_may_give(name: str) -> None:
    kind = _kind(name)
    spec = CriterionSpec.model_validate(kind.example)
    labels = kind.labels_of(builtin_registry().validate(spec))

    def first(request: JudgeRequest) -> object:
        return label(request.allowed_labels[0])

    judge = ScriptedJudge(first)
    verdict = grade(name, ctx=CriterionContext(judge=judge), **spec.params)
    assert verdict.status in ("pass", "fail"), verdict.detail
    assert [request.allowed_labels for request in judge.requests] == [labels]


def test_each_kind_that_needs_a_judge_has_a_judge_prompt() -> None:
    registry = builtin_registry()
    assert set(load_prompts()) == {name for name in registry if "judge" in registry.needs(name)}
