"""builtin_registry: the 22 kinds of the criteria reference, their parameters and defaults."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from soev_pipeline.criteria import PURE_KINDS, Builtin, builtin_registry

REQUIRED = object()
ANY = object()
"""A parameter without a default that the reference states."""

KINDS: dict[str, dict[str, Any]] = {
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
GIVEN: dict[str, dict[str, Any]] = {
    "reply.language": {"language": "nl"},
    "reply.max_length": {"max": 10},
    "usage.max_tokens": {"max": 10},
    "usage.max_seconds": {"max": 10},
    "rubric.judge": {"rubric": "r.md", "labels": ["a"], "pass_labels": ["a"]},
}
"""What each kind needs at the least."""


def test_builtin_registry_has_the_22_kinds_and_a_new_registry_each_call() -> None:
    registry = builtin_registry()
    assert set(registry) == set(KINDS)
    assert builtin_registry() is not registry


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_has_the_parameters_and_defaults_of_the_reference(name: str) -> None:
    kind = builtin_registry().get(name)
    assert isinstance(kind, Builtin)
    assert kind.name == name
    fields = kind.params_model.model_fields
    if name == "rubric.judge":
        assert set(KINDS[name]) <= set(fields)  # SPEC 9 adds the watsonx.gov-style criterion
    else:
        assert set(fields) == set(KINDS[name])
    model = kind.params_model.model_validate(GIVEN.get(name, {}))
    for field, default in KINDS[name].items():
        if default is REQUIRED:
            assert fields[field].is_required(), field
        elif default is not ANY:
            value = getattr(model, field)
            assert (list(value) if isinstance(default, list) else value) == default, field


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_refuses_an_unknown_parameter(name: str) -> None:
    model = builtin_registry().get(name).params_model
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({**GIVEN.get(name, {}), "onbekend": 1})


@pytest.mark.parametrize(
    "name", [name for name in KINDS if name.startswith("citations.") and "match" in KINDS[name]]
)
def test_match_is_hierarchical_or_exact(name: str) -> None:
    model = builtin_registry().get(name).params_model
    assert model.model_validate({"match": "exact"}).match == "exact"
    with pytest.raises(pydantic.ValidationError):
        model.model_validate({"match": "fuzzy"})


def test_the_pure_kinds_are_every_kind_but_the_judges() -> None:
    kinds = set(builtin_registry())
    judged = {"behaviour.expected", "privacy.names", "nuggets.coverage", "rubric.judge"}
    assert kinds - PURE_KINDS == judged | {"compare.equivalent"}
    assert kinds >= PURE_KINDS
