"""SPEC.md section 10 through the CLI: error bars in the report, compare, gates, JUnit, plan.

The figures are recomputed here from the archived verdicts with the formulas of the
section, written out again on purpose rather than imported.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from tests.conformance.conftest import Baseline
from tests.support.cli import invoke
from tests.support.project import SECRET, TEST_IDS, dump
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = pytest.mark.e2e

Z, POWER = 1.96, 0.8416


def _case_rates(run: Path) -> dict[str, tuple[str, str, float]]:
    """case id → (suite, split, pass rate) from the latest scoring's verdicts.jsonl."""
    scoring = sorted((run / "scorings").iterdir())[-1]
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    place = {}
    for line in (scoring / "verdicts.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        tally[raw["case_id"]][0] += raw["passed"]
        tally[raw["case_id"]][1] += 1
        place[raw["case_id"]] = (raw["suite"], raw["split"])
    return {case: (*place[case], passed / total) for case, (passed, total) in tally.items()}


def _expected(rates: list[float]) -> dict[str, Any]:
    n = len(rates)
    p = sum(rates) / n
    se = math.sqrt(sum((s - p) ** 2 for s in rates) / (n * (n - 1))) if n > 1 else None
    m = p * (1 - p) / se**2 if se and 0 < p < 1 else n
    c = 1 + Z * Z / m
    centre = (p + Z * Z / (2 * m)) / c
    half = Z * math.sqrt(p * (1 - p) / m + Z * Z / (4 * m * m)) / c
    drop = (Z + POWER) * math.sqrt(2) * se if se is not None else None
    return {"pass_rate": p, "stderr": se, "ci95": [centre - half, centre + half], "drop": drop}


def _close(actual: Any, expected: Any) -> bool:
    if expected is None or actual is None:
        return actual is expected
    if isinstance(expected, list):
        return all(abs(a - b) <= 1e-3 for a, b in zip(actual, expected, strict=True))
    return abs(actual - expected) <= 1e-3


def test_every_rate_of_the_report_has_its_error_bars(baseline: Baseline) -> None:
    report = baseline.report.json()
    rates = _case_rates(baseline.run)
    groups = {
        **{
            ("suites", name): [r for s, _, r in rates.values() if s == name]
            for name in report["suites"]
        },
        **{
            ("splits", name): [r for _, t, r in rates.values() if t == name]
            for name in report["splits"]
        },
    }
    entries = {key: report[key[0]][key[1]] for key in groups}
    groups[("overall", "")] = [r for _, _, r in rates.values()]
    entries[("overall", "")] = report["overall"]
    for key, values in groups.items():
        entry, expected = entries[key], _expected(values)
        assert entry["cases"] == len(values), key
        assert _close(entry["pass_rate"], expected["pass_rate"]), key
        assert _close(entry["stderr"], expected["stderr"]), key
        assert _close(entry["ci95"], expected["ci95"]), key
        assert _close(entry["detectable_drop"], expected["drop"]), key
    assert "[" in baseline.text.out and "%" in baseline.text.out


def test_the_report_previous_is_the_compare_object(baseline: Baseline) -> None:
    args = ("--project", baseline.project)
    compared = invoke("compare", "b1", "b0", "--json", *args)
    assert compared.status == 0, compared.err
    comparison = compared.json()
    assert baseline.report.json()["previous"] == comparison
    assert invoke("compare", "b1", "previous", "--json", *args).json() == comparison
    assert comparison["baseline_id"] == "b0" and comparison["alpha"] == 0.05
    # b0 knew nothing of the test cases; they count, and are never named
    assert comparison["splits"]["test"]["improved"] == len(TEST_IDS)
    named = [change["case_id"] for change in comparison["improvements"]]
    assert not set(named) & set(TEST_IDS)
    compared.assert_no_test_content()
    assert "p_holm" in next(iter(comparison["suites"].values()))
    assert "p_holm" not in comparison["overall"]


CASES = 8


def _project(root: Path, url: str, name: str = "gates") -> Path:
    cases = [{"id": f"g-{i:02d}", "input": f"Vraag {i} over bezwaar?"} for i in range(CASES)] + [
        {"id": f"g-t{i}", "split": "test", "input": f"Geheime vraag {i} {SECRET}"} for i in range(2)
    ]
    dump(
        root / "suites" / "gates.yaml",
        {
            "suite": "gates",
            "criteria": [{"kind": "run.no_failure", "gate": True}],
            "cases": cases,
        },
    )
    project = {
        "name": name,
        "system": {"base_url": url, "agent": "a", "max_retries": 0},
        "suites": [{"name": "gates", "files": "suites/gates.yaml"}],
    }
    dump(root / "project.yaml", project)
    return root / "project.yaml"


class Switch:
    """An assistant that answers, or fails every turn once `broken` is set."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, text: str, history: list[str]) -> Reply:
        return Reply(failure="kapot") if self.broken else Reply("De termijn is zes weken.")


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Switch]]:
    """Runs `good` (all pass), `bad` (all fail) and `fixed` (all pass) of an 8-case project."""
    root = tmp_path_factory.mktemp("gates")
    switch = Switch()
    with FakeThreadAPI(switch) as system:
        project = _project(root / "p", system.url)
        for run_id, broken in (("good", False), ("bad", True), ("fixed", False)):
            switch.broken = broken
            assert invoke("run", "--project", project, "--run-id", run_id).status == 0
    yield project, switch


def test_a_real_regression_fails_the_gate(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    plain = invoke("compare", "bad", "good", "--project", project)
    assert plain.status == 0 and "regressed" in plain.out
    gate = invoke("compare", "bad", "good", "--project", project, "--fail-on-regression")
    assert gate.status == 3
    assert "quality gate failed" in gate.error_line()
    comparison = invoke("compare", "bad", "good", "--project", project, "--json").json()
    overall = comparison["overall"]
    assert (overall["pairs"], overall["regressed"], overall["improved"]) == (
        CASES + 2,
        CASES + 2,
        0,
    )
    assert overall["p_value"] == pytest.approx(2 / 2 ** (CASES + 2))
    assert comparison["suites"]["gates"]["verdict"] == "regressed"
    assert len(comparison["regressions"]) == CASES  # dev cases only
    gate.assert_no_test_content()
    plain.assert_no_test_content()


def test_an_improvement_and_an_unchanged_rerun_pass_the_gate(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    improved = invoke("compare", "fixed", "previous", "--project", project, "--fail-on-regression")
    assert improved.status == 0, improved.err
    assert "improved" in improved.out
    same = invoke(
        "compare", "fixed", "good", "--project", project, "--json", "--fail-on-regression"
    )
    assert same.status == 0 and same.json()["overall"]["verdict"] == "unchanged"


def test_fail_under_gates_the_overall_pass_rate(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    assert invoke("report", "good", "--project", project, "--fail-under", "1").status == 0
    failed = invoke("report", "bad", "--project", project, "--fail-under", "0.5")
    assert failed.status == 3 and "quality gate failed" in failed.err
    assert "run bad" in failed.out  # the report is printed before the gate


def test_the_junit_file_parses_and_names_no_test_case(
    gated: tuple[Path, Switch], tmp_path: Path
) -> None:
    project, _ = gated
    path = tmp_path / "junit.xml"
    assert invoke("report", "bad", "--project", project, "--junit", path).status == 0
    assert SECRET not in path.read_text(encoding="utf-8")
    (suite,) = list(JUnitXml.fromfile(str(path)))
    cases = list(suite)
    assert [case.name for case in cases] == [*(f"g-{i:02d}" for i in range(CASES)), "test split"]
    assert all(not case.is_passed for case in cases)
    assert "2 of 2 test cases" in cases[-1].result[0].message


def test_plan_says_what_the_suite_detects(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    plain = invoke("plan", "--project", project, "--run", "bad")
    assert plain.status == 0 and "gates" in plain.out and "overall" in plain.out
    planned = invoke("plan", "--project", project, "--drop", "0.2", "--k", "3", "--json").json()
    assert planned["run_id"] == "fixed" and planned["k"] == 3 and planned["drop"] == 0.2
    assert planned["groups"]["gates"]["cases"] == CASES + 2


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("compare", "nope", "good"), 1, "no run 'nope'"),
        (("compare", "good", "nope"), 1, "no run 'nope'"),
        (("compare", "good", "previous"), 1, "no earlier run"),
        (("compare", "good", "good"), 1, "its own baseline"),
        (("compare", "bad", "good", "--alpha", "0"), 2, "--alpha"),
        (("compare", "bad", "good", "--alpha", "1.5"), 2, "--alpha"),
        (("report", "bad", "--fail-under", "2"), 2, "--fail-under"),
        (("report", "bad", "--fail-under", "-0.1"), 2, "--fail-under"),
        (("plan", "--drop", "0"), 2, "--drop"),
    ],
)
def test_bad_input_to_the_statistics_commands(
    gated: tuple[Path, Switch], args: tuple[str, ...], status: int, message: str
) -> None:
    project, _ = gated
    result = invoke(*args, "--project", project)
    assert result.status == status
    assert message in result.error_line()


def test_a_baseline_of_another_project_and_runs_without_pairs_are_refused(
    gated: tuple[Path, Switch], tmp_path: Path
) -> None:
    project, switch = gated
    runs = project.parent / "runs"
    with FakeThreadAPI(switch) as system:
        other = _project(tmp_path / "other", system.url, name="ander")
        assert (
            invoke("run", "--project", other, "--run-id", "elders", "--runs-dir", runs).status == 0
        )
        reworded = _project(tmp_path / "reworded", system.url)
        suite = reworded.parent / "suites" / "gates.yaml"
        suite.write_text(suite.read_text(encoding="utf-8").replace("raag", "raagje"), "utf-8")
        assert (
            invoke(
                "run", "--project", reworded, "--run-id", "herschreven", "--runs-dir", runs
            ).status
            == 0
        )
    foreign = invoke("compare", "good", "elders", "--project", project)
    assert foreign.status == 1 and "belongs to project 'ander'" in foreign.error_line()
    foreign = invoke("report", "elders", "--project", project)
    assert foreign.status == 1 and "belongs to project 'ander'" in foreign.error_line()
    unpaired = invoke("compare", "herschreven", "good", "--project", project)
    assert unpaired.status == 1 and "share no case" in unpaired.error_line()
    unpaired.assert_no_test_content()
