"""The one place formatter of error messages, and the `field: message` of a ValidationError."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from soev_pipeline.core.errors import validation_problem, where


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: int
    cases: list[Inner] = []


def problem_of(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(data)
    return caught.value


@pytest.mark.parametrize(
    ("kwargs", "place"),
    [
        ({}, "f.yaml"),
        ({"field": "system.retries"}, "f.yaml: system.retries"),
        ({"case": "kern-001", "field": "inputt"}, "f.yaml: case 'kern-001': inputt"),
        ({"case": "kern-001", "split": "dev", "position": 0}, "f.yaml: case 'kern-001'"),
        ({"position": 3}, "f.yaml: case #4"),
        ({"line": 3}, "f.yaml: line 3"),
        ({"line": 3, "column": 7}, "f.yaml: line 3, column 7"),
    ],
)
def test_the_place_names_what_it_is_given_in_order(kwargs: dict[str, object], place: str) -> None:
    assert where(Path("f.yaml"), **kwargs) == place


@pytest.mark.parametrize(
    ("position", "place"),
    [(3, "f.yaml: test case #4: behaviour"), (None, "f.yaml: a test case: behaviour")],
)
def test_a_test_case_is_never_named_by_its_id(position: int | None, place: str) -> None:
    text = where("f.yaml", case="kern-t01", split="test", position=position, field="behaviour")

    assert text == place
    assert "kern-t01" not in text


def test_an_extra_key_is_an_unknown_key() -> None:
    assert validation_problem(problem_of({"count": 1, "bogus": 2})) == "bogus: unknown key"


def test_the_other_problems_are_counted() -> None:
    one_more = problem_of({"bogus": 1})
    two_more = problem_of({"bogus": 1, "other": 2})

    assert validation_problem(one_more) == "count: Field required (and 1 more problem)"
    assert validation_problem(two_more).endswith(" (and 2 more problems)")


def test_an_error_about_the_whole_input_is_at_the_top_level() -> None:
    assert validation_problem(problem_of(None)).startswith("(top level): Input should be")


def test_skip_leaves_out_the_part_of_the_location_the_place_names() -> None:
    in_a_case = problem_of({"count": 1, "cases": [{"name": "a"}, {"name": "b", "x": 1}]})
    not_a_case = problem_of({"count": 1, "cases": ["text"]})

    assert validation_problem(in_a_case, skip=2) == "x: unknown key"
    assert validation_problem(not_a_case, skip=2).startswith("Input should be")
