"""`soev-evals report RUN [--json]` (SPEC.md sections 5 and 8)."""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conformance.conftest import CLI, Baseline, invoke
from tests.conformance.support import SECRET, FakeThreadSystem, Turn, dump, legal_answer

SUITE_FIGURES = {"cases", "attempts", "pass_rate", "mean_score", "pass_at_k", "pass_all_k"}
CRITERION_COUNTS = {"pass", "fail", "error", "not_applicable"}
VERDICT_KEYS = {"kind", "status", "detail", "weight", "gate"}
DEV_CASES = {"kern-001", "kern-002", "kern-003", "priv-001"}


def number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def test_report_json_has_the_top_level_shape_of_section_8(baseline: Baseline) -> None:
    data = baseline.report.json()
    assert isinstance(data, dict)
    assert data["run_id"] == "r1"
    assert data["k"] == 2 and isinstance(data["k"], int)
    assert "split" in data
    assert isinstance(data["suites"], dict)
    assert isinstance(data["criteria"], dict)
    assert isinstance(data["cases"], list)


def test_report_json_suites_hold_the_figures_of_section_8(baseline: Baseline) -> None:
    suites = baseline.report.json()["suites"]
    assert set(suites) == {"kern", "privacy"}
    for figures in suites.values():
        assert set(figures) >= SUITE_FIGURES
        assert isinstance(figures["cases"], int) and isinstance(figures["attempts"], int)
        for key in ("pass_rate", "pass_at_k", "pass_all_k"):
            assert number(figures[key]) and 0.0 <= figures[key] <= 1.0
        assert figures["mean_score"] is None or number(figures["mean_score"])
    # test cases count in the aggregates: kern has 3 dev cases and 1 test case.
    assert suites["kern"]["cases"] == 4 and suites["kern"]["attempts"] == 8
    assert suites["privacy"]["cases"] == 2 and suites["privacy"]["attempts"] == 4


def test_report_json_criteria_count_each_status(baseline: Baseline) -> None:
    data = baseline.report.json()
    criteria = data["criteria"]
    expected_kinds = {
        "run.no_failure",
        "citations.required",
        "citations.forbidden",
        "nuggets.coverage",
        "custom.thanks",
        "rubric.judge",
        "usage.max_tokens",
        "usage.max_seconds",
        "behaviour.message",
        "refusal.code",
        "behaviour.expected",
    }
    assert set(criteria) == expected_kinds
    for counts in criteria.values():
        assert set(counts) == CRITERION_COUNTS
        assert all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values())
    # run.no_failure: 3 cases of awb.yaml (shared) + kern-003, each twice
    assert sum(criteria["run.no_failure"].values()) == 8
    assert criteria["run.no_failure"]["fail"] == 2  # kern-003 fails both attempts
    # behaviour.message: priv-001 and the test case priv-t01, twice each
    assert criteria["behaviour.message"] == {
        "pass": 4,
        "fail": 0,
        "error": 0,
        "not_applicable": 0,
    }


def test_report_json_cases_are_dev_cases_only(baseline: Baseline) -> None:
    baseline.report.assert_no_test_content()
    cases = baseline.report.json()["cases"]
    assert {case["case_id"] for case in cases} == DEV_CASES
    for case in cases:
        assert case["split"] == "dev"
        assert case["suite"] in ("kern", "privacy")
        assert number(case["pass_rate"])
        assert [attempt["attempt"] for attempt in case["attempts"]] == [0, 1]
        for attempt in case["attempts"]:
            assert isinstance(attempt["passed"], bool)
            assert attempt["score"] is None or number(attempt["score"])
            for verdict in attempt["verdicts"]:
                assert set(verdict) >= VERDICT_KEYS
                assert verdict["status"] in CRITERION_COUNTS
                assert isinstance(verdict["detail"], str)
                assert number(verdict["weight"]) and isinstance(verdict["gate"], bool)


def _score(verdicts: list[dict]) -> float | None:
    if any(v["gate"] and v["status"] in ("fail", "error") for v in verdicts):
        return 0.0
    counted = [v for v in verdicts if v["status"] in ("pass", "fail")]
    total = sum(v["weight"] for v in counted)
    if not counted:
        return None
    if total == 0:
        return None
    return sum(v["weight"] for v in counted if v["status"] == "pass") / total


def test_attempt_scores_follow_section_5(baseline: Baseline) -> None:
    for case in baseline.report.json()["cases"]:
        rates = []
        for attempt in case["attempts"]:
            verdicts = attempt["verdicts"]
            expected = _score(verdicts)
            if expected is None:
                assert attempt["score"] is None
            else:
                assert math.isclose(attempt["score"], expected)
            passed = (
                not any(v["status"] == "error" for v in verdicts)
                and not any(v["gate"] and v["status"] == "fail" for v in verdicts)
                and attempt["score"] is not None
                and attempt["score"] >= 1.0
            )
            assert attempt["passed"] is passed, (case["case_id"], verdicts)
            rates.append(passed)
        assert math.isclose(case["pass_rate"], sum(rates) / len(rates))


def test_weights_and_the_case_verdict_order(baseline: Baseline) -> None:
    cases = {case["case_id"]: case for case in baseline.report.json()["cases"]}
    verdicts = cases["kern-001"]["attempts"][0]["verdicts"]
    kinds = [v["kind"] for v in verdicts]
    # the file's shared criteria come first
    assert kinds[0] == "run.no_failure"
    assert kinds[1:] == ["citations.required", "nuggets.coverage", "custom.thanks", "rubric.judge"]
    by_kind = {v["kind"]: v for v in verdicts}
    assert by_kind["nuggets.coverage"]["weight"] == 2.0
    assert by_kind["citations.required"]["gate"] is True
    assert by_kind["custom.thanks"]["status"] == "pass"  # "bedankt" is in the reply


def test_suite_figures_are_means_of_case_figures(baseline: Baseline) -> None:
    data = baseline.report.json()
    privacy = data["suites"]["privacy"]
    priv = next(case for case in data["cases"] if case["case_id"] == "priv-001")
    # priv-001 fails behaviour.expected (the fake judge says "answer"); priv-t01 passes.
    assert priv["pass_rate"] == 0.0
    assert math.isclose(privacy["pass_rate"], 0.5)
    assert math.isclose(privacy["pass_at_k"], 0.5)
    assert math.isclose(privacy["pass_all_k"], 0.5)


def test_report_text_exits_0_and_shows_no_test_case(baseline: Baseline, cli: CLI) -> None:
    result = cli("report", "r1", "--project", baseline.project)
    assert result.status == 0
    assert "kern" in result.out and "privacy" in result.out
    result.assert_no_test_content()


def test_project_defaults_to_project_yaml_in_the_working_directory(
    baseline: Baseline, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(baseline.project.parent)
    result = cli("report", "r1", "--json")
    assert result.status == 0, result.err
    assert result.json()["run_id"] == "r1"


def test_report_of_an_unknown_run_is_a_one_line_error(baseline: Baseline, cli: CLI) -> None:
    result = cli("report", "bestaat-niet", "--json", "--project", baseline.project)
    assert result.status == 1
    assert "bestaat-niet" in result.error_line()
    assert result.out == ""


def test_report_shows_the_latest_scoring(project: Path, cli: CLI) -> None:
    args = ("--project", project)
    assert cli("run", *args, "--run-id", "r1", "--suite", "privacy", "--split", "dev").status == 0
    first = cli("report", "r1", "--json", *args).json()
    (project.parent / "suites" / "privacy" / "persoonsgegevens.yaml").write_text(
        (project.parent / "suites" / "privacy" / "persoonsgegevens.yaml")
        .read_text()
        .replace("kind: behaviour.expected", "kind: reply.max_length\n    max: 5")
    )
    assert cli("rescore", "r1", *args).status == 0
    second = cli("report", "r1", "--json", *args).json()
    assert "behaviour.expected" in first["criteria"]
    assert "behaviour.expected" not in second["criteria"]
    assert second["criteria"]["reply.max_length"]["fail"] == 1


# --------------------------------------------------------------------------- section 5


def scoring_answer() -> Callable[[str, list[str]], Turn]:
    flips = itertools.count()
    lock = threading.Lock()

    def answer(text: str, history: list[str]) -> Turn:
        if text.startswith("wisselend"):
            with lock:
                odd = next(flips) % 2
            return Turn("Het zijn vier weken." if odd else "Het zijn zes weken.")
        return Turn("De termijn is zes weken.")

    return answer


SCORING_CASES = {
    # case id: (criteria, expected score, expected passed)
    "s-weighted": (
        [
            {"kind": "reply.contains", "substrings": ["zes"], "weight": 3},
            {"kind": "reply.contains", "substrings": ["vier"], "weight": 1},
        ],
        0.75,
        True,
    ),
    "s-weighted-low": (
        [
            {"kind": "reply.contains", "substrings": ["zes"]},
            {"kind": "reply.contains", "substrings": ["vier"]},
        ],
        0.5,
        False,
    ),
    "s-gate-fail": (
        [
            {"kind": "reply.contains", "substrings": ["vier"], "gate": True},
            {"kind": "reply.contains", "substrings": ["zes"]},
        ],
        0.0,
        False,
    ),
    "s-gate-error": (
        [
            {"kind": "behaviour.expected", "gate": True},
            {"kind": "reply.contains", "substrings": ["zes"]},
        ],
        0.0,
        False,
    ),
    "s-error": (
        [{"kind": "reply.contains", "substrings": ["zes"]}, {"kind": "behaviour.expected"}],
        1.0,
        False,
    ),
    "s-not-applicable": (
        [{"kind": "citations.required"}, {"kind": "reply.contains", "substrings": ["zes"]}],
        1.0,
        True,
    ),
    "s-only-not-applicable": ([{"kind": "citations.required"}], None, None),
}


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory, shared_dagster_home: Path) -> Iterator[dict]:
    with FakeThreadSystem(scoring_answer()) as system:
        directory = tmp_path_factory.mktemp("scoring") / "p"
        dump(
            directory / "project.yaml",
            {
                "name": "scores",
                "system": {"base_url": system.url, "agent": "wetwijzer"},
                "scoring": {"pass_threshold": 0.7},
                "suites": [{"name": "s", "files": "s.yaml"}],
            },
        )
        cases = [
            {"id": case_id, "input": f"vraag {case_id}", "criteria": criteria}
            for case_id, (criteria, _, _) in SCORING_CASES.items()
        ]
        cases.append(
            {
                "id": "s-flaky",
                "input": "wisselend: hoe lang?",
                "criteria": [{"kind": "reply.not_contains", "substrings": ["vier"]}],
            }
        )
        dump(directory / "s.yaml", {"suite": "s", "cases": cases})
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DAGSTER_HOME", str(shared_dagster_home))
            project = directory / "project.yaml"
            assert invoke("run", "--project", project, "--run-id", "r1", "--k", "2").status == 0
            result = invoke("report", "r1", "--json", "--project", project)
        yield result.json()


@pytest.mark.parametrize("case_id", sorted(SCORING_CASES))
def test_score_and_passed_of_section_5(scored: dict, case_id: str) -> None:
    _, score, passed = SCORING_CASES[case_id]
    case = next(c for c in scored["cases"] if c["case_id"] == case_id)
    for attempt in case["attempts"]:
        if score is None:
            assert attempt["score"] is None
        else:
            assert math.isclose(attempt["score"], score)
        if passed is not None:
            assert attempt["passed"] is passed


def test_case_figures_over_k_attempts(scored: dict) -> None:
    flaky = next(c for c in scored["cases"] if c["case_id"] == "s-flaky")
    assert sorted(a["passed"] for a in flaky["attempts"]) == [False, True]
    assert math.isclose(flaky["pass_rate"], 0.5)
    suite = scored["suites"]["s"]
    assert suite["cases"] == len(SCORING_CASES) + 1
    assert suite["attempts"] == 2 * suite["cases"]
    rates = [c["pass_rate"] for c in scored["cases"]]
    assert math.isclose(suite["pass_rate"], sum(rates) / len(rates))
    at_k = [any(a["passed"] for a in c["attempts"]) for c in scored["cases"]]
    all_k = [all(a["passed"] for a in c["attempts"]) for c in scored["cases"]]
    assert math.isclose(suite["pass_at_k"], sum(at_k) / len(at_k))
    assert math.isclose(suite["pass_all_k"], sum(all_k) / len(all_k))


def test_the_comparison_with_the_previous_run_names_no_test_case(
    project: Path, cli: CLI, system: FakeThreadSystem
) -> None:
    assert cli("run", "--project", project, "--run-id", "r1").status == 0

    def worse(text: str, history: list[str]) -> Turn:
        if SECRET in text:
            return Turn("Geen idee.")
        return legal_answer(text, history)

    system.answer = worse
    second = cli("run", "--project", project, "--run-id", "r2")
    assert second.status == 0
    second.assert_no_test_content()
    for args in (("report", "r2"), ("report", "r2", "--json")):
        result = cli(*args, "--project", project)
        assert result.status == 0
        result.assert_no_test_content()
