"""usage.max_tokens, usage.max_seconds and run.no_failure: budgets and health over all turns."""

from __future__ import annotations

from typing import Any

import pytest

from soev_pipeline.core import VariantEvidence
from tests.support.builders import grade, make_evidence, make_turn, make_variant, params_error


def with_variant(*turns: Any) -> VariantEvidence:
    return VariantEvidence(id="kern-001-a", reply="Zes weken.", turns=turns)


class TestMaxTokens:
    @pytest.mark.parametrize(("maximum", "status"), [(45, "pass"), (44, "fail")])
    def test_counts_the_turns_of_the_case_and_its_variants(self, maximum: int, status: str) -> None:
        evidence = make_evidence(
            turns=[make_turn(tokens=(10, 20)), make_turn(tokens=(5, 0))],
            variants=[with_variant(make_turn(tokens=(4, 6)))],
        )
        verdict = grade("usage.max_tokens", evidence, max=maximum)
        assert (verdict.status, verdict.detail) == (status, f"45 tokens (max {maximum})")
        assert verdict.version == "1"

    def test_a_turn_without_usage_is_an_error(self) -> None:
        evidence = make_evidence(
            turns=[make_turn(tokens=(10, 20))], variants=[make_variant("kern-001-a")]
        )
        verdict = grade("usage.max_tokens", evidence, max=1000)
        assert (verdict.status, verdict.detail) == (
            "error",
            "1 of 2 turns reported no token usage",
        )

    def test_no_turns_is_an_error(self) -> None:
        verdict = grade("usage.max_tokens", make_evidence(), max=1000)
        assert (verdict.status, verdict.detail) == ("error", "the attempt has no turns")


class TestMaxSeconds:
    @pytest.mark.parametrize(("maximum", "status"), [(4, "pass"), (3.5, "fail")])
    def test_adds_the_seconds_of_every_turn(self, maximum: float, status: str) -> None:
        evidence = make_evidence(
            turns=[make_turn(seconds=1.5), make_turn(None, seconds=2.0)],
            variants=[with_variant(make_turn(seconds=0.5))],
        )
        verdict = grade("usage.max_seconds", evidence, max=maximum)
        assert (verdict.status, verdict.detail) == (status, f"4.00 s (max {maximum:g} s)")
        assert verdict.version == "1"

    def test_no_turns_is_an_error(self) -> None:
        verdict = grade("usage.max_seconds", make_evidence(), max=30)
        assert (verdict.status, verdict.detail) == ("error", "the attempt has no turns")


class TestNoFailure:
    def test_passes_when_no_turn_failed(self) -> None:
        evidence = make_evidence(
            turns=[make_turn(), make_turn()], variants=[make_variant("kern-001-a")]
        )
        verdict = grade("run.no_failure", evidence)
        assert (verdict.status, verdict.detail) == ("pass", "3 turn(s) without failure")
        assert verdict.version == "1"

    def test_names_the_first_failure_of_the_case_or_a_variant(self) -> None:
        evidence = make_evidence(
            None,
            turns=[make_turn(), make_turn(None, failure="service_unavailable")],
            variants=[make_variant("kern-001-a", None)],
        )
        verdict = grade("run.no_failure", evidence)
        assert (verdict.status, verdict.detail) == (
            "fail",
            "2 failed turn(s); first: service_unavailable",
        )
        only_variant = make_evidence(
            turns=[make_turn()], variants=[make_variant("kern-001-a", None)]
        )
        assert grade("run.no_failure", only_variant).detail == "1 failed turn(s); first: timeout"

    def test_an_attempt_without_turns_fails(self) -> None:
        verdict = grade("run.no_failure", make_evidence())
        assert (verdict.status, verdict.detail) == ("fail", "the attempt recorded no turn")


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("usage.max_tokens", {}),
        ("usage.max_tokens", {"max": -1}),
        ("usage.max_tokens", {"max": 1.5}),
        ("usage.max_seconds", {"max": -0.1}),
        ("usage.max_seconds", {"max": "lang"}),
        ("run.no_failure", {"strict": True}),
    ],
)
def test_invalid_parameters_are_refused(kind: str, params: dict[str, Any]) -> None:
    assert f"criterion {kind!r}: parameter " in params_error(kind, **params)
