"""`soev-evals report RUN [--json]` of the baseline (docs/runs.md#the-report): its shape, the
figures of docs/runs.md#scoring, and no test case in anything a command printed."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.conformance.conftest import Baseline

pytestmark = pytest.mark.e2e

FIGURES = {"cases", "attempts", "pass_rate", "mean_score", "pass_at_k", "pass_all_k"}
COUNTS = {"pass", "fail", "error", "not_applicable"}
VERDICT_KEYS = {"kind", "status", "detail", "weight", "gate"}
DEV_CASES = {"kern-001", "kern-002", "kern-003", "priv-001"}


def number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def test_report_json_has_the_shape_of_section_8(baseline: Baseline) -> None:
    data = baseline.report.json()
    assert (data["run_id"], data["k"], data["split"]) == ("b1", 2, None)
    assert set(data["suites"]) == {"kern", "privacy"}
    for figures in data["suites"].values():
        assert set(figures) >= FIGURES
        assert isinstance(figures["cases"], int) and isinstance(figures["attempts"], int)
        for key in FIGURES - {"cases", "attempts"}:
            assert figures[key] is None or (number(figures[key]) and 0 <= figures[key] <= 1)
    for counts in data["criteria"].values():
        assert set(counts) == COUNTS and all(type(n) is int for n in counts.values())
    assert {case["case_id"] for case in data["cases"]} == DEV_CASES
    for case in data["cases"]:
        assert case["split"] == "dev" and number(case["pass_rate"])
        assert [attempt["attempt"] for attempt in case["attempts"]] == [0, 1]
        for attempt in case["attempts"]:
            assert isinstance(attempt["passed"], bool)
            assert attempt["score"] is None or number(attempt["score"])
            for verdict in attempt["verdicts"]:
                assert set(verdict) == VERDICT_KEYS
                assert verdict["status"] in COUNTS and isinstance(verdict["detail"], str)
                assert number(verdict["weight"]) and isinstance(verdict["gate"], bool)


def expected_score(verdicts: list[dict[str, Any]]) -> float | None:
    if any(v["gate"] and v["status"] in ("fail", "error") for v in verdicts):
        return 0.0
    counted = [v for v in verdicts if v["status"] in ("pass", "fail")]
    total = sum(v["weight"] for v in counted)
    return sum(v["weight"] for v in counted if v["status"] == "pass") / total if total else None


def test_the_report_carries_the_figures_of_section_5(baseline: Baseline) -> None:
    """The scoring rules are unit-tested in tests/run; here: the CLI reports what they give."""
    data = baseline.report.json()
    for case in data["cases"]:
        passes = []
        for attempt in case["attempts"]:
            verdicts = attempt["verdicts"]
            score = expected_score(verdicts)
            if score is None:
                assert attempt["score"] is None
            else:
                assert attempt["score"] == pytest.approx(score)
            passed = (
                all(v["status"] != "error" for v in verdicts)
                and not any(v["gate"] and v["status"] == "fail" for v in verdicts)
                and (score is None or score >= 1.0)  # the project's pass_threshold
            )
            assert attempt["passed"] is passed, (case["case_id"], verdicts)
            passes.append(passed)
        assert math.isclose(case["pass_rate"], sum(passes) / len(passes))
        assert case["pass_at_k"] is any(passes) and case["pass_all_k"] is all(passes)
    cases = {case["case_id"]: case for case in data["cases"]}
    assert cases["kern-001"]["pass_rate"] == 1.0
    assert cases["kern-003"]["pass_rate"] == 0.0  # its turn failed: the run still exits 0
    assert cases["priv-001"]["pass_rate"] == 0.0  # the fake judge says "answer", not "refuse"
    privacy = data["suites"]["privacy"]  # priv-001 fails, the test case priv-t01 passes
    assert (privacy["cases"], privacy["attempts"]) == (2, 4)
    assert privacy["pass_rate"] == pytest.approx(0.5)
    assert (privacy["pass_at_k"], privacy["pass_all_k"]) == (0.5, 0.5)
    assert (data["suites"]["kern"]["cases"], data["suites"]["kern"]["attempts"]) == (4, 8)
    assert data["criteria"]["run.no_failure"] == {
        "pass": 6,
        "fail": 2,  # kern-003, twice
        "error": 0,
        "not_applicable": 0,
    }


def test_verdicts_keep_the_order_weight_and_gate_of_the_suite_file(baseline: Baseline) -> None:
    cases = {case["case_id"]: case for case in baseline.report.json()["cases"]}
    verdicts = cases["kern-001"]["attempts"][0]["verdicts"]
    assert [v["kind"] for v in verdicts] == [
        "run.no_failure",  # the file's criteria come first
        "citations.required",
        "citations.quotes_verbatim",  # against the corpus lookup
        "reply.language",  # with the built-in language detector
        "nuggets.coverage",
        "custom.thanks",  # the hooks' kind
        "rubric.judge",
    ]
    assert all(v["status"] == "pass" for v in verdicts)
    by_kind = {v["kind"]: v for v in verdicts}
    assert by_kind["nuggets.coverage"]["weight"] == 2.0
    assert by_kind["citations.required"]["gate"] is True


def test_no_command_prints_a_test_case(baseline: Baseline) -> None:
    """Test cases count in the aggregates alone, also in the comparison with the previous run
    (b0, where both test cases failed)."""
    for result in (baseline.printed, baseline.rescored, baseline.report, baseline.text):
        assert result.status == 0
        result.assert_no_test_content()
    data = baseline.report.json()
    assert data["splits"]["test"]["cases"] == 2
    previous = data["previous"]
    assert previous["baseline_id"] == "b0"
    assert previous["splits"]["test"]["improved"] == 2
    assert "kern" in baseline.text.out and "privacy" in baseline.text.out
