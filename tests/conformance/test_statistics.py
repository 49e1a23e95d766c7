"""docs/statistics.md through the CLI: error bars in the report, compare, gates, JUnit, plan,
and runs whose attempts did not run.

The figures are recomputed here from the archived verdicts with the formulas of that page,
written out again on purpose rather than imported; `detectable_drop`, which the product
computes by a method of its own
(docs/statistics.md#power-what-a-suite-detects-and-how-many-cases-it-needs), is checked
against that method (`core.power`) fed with moments recomputed here, for the group and for
the rest of the run beside it.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml

from soev_pipeline.core.power import CasePopulation, Rest, cases_needed, detectable_drop
from tests.conformance.conftest import Baseline
from tests.support.cli import Result, invoke
from tests.support.project import SECRET, TEST_IDS, dump, edit_yaml
from tests.support.thread_api import FakeThreadAPI, Reply, Response, problem

pytestmark = pytest.mark.e2e

Z = 1.96


def _case_counts(run: Path) -> dict[str, tuple[str, str, int, int]]:
    """case id → (suite, split, passed, attempts) from the latest scoring's verdicts.jsonl."""
    scoring = sorted((run / "scorings").iterdir())[-1]
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    place = {}
    for line in (scoring / "verdicts.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        tally[raw["case_id"]][0] += raw["passed"]
        tally[raw["case_id"]][1] += 1
        place[raw["case_id"]] = (raw["suite"], raw["split"])
    return {case: (*place[case], passed, total) for case, (passed, total) in tally.items()}


def _population(counts: list[tuple[int, int]]) -> CasePopulation:
    """The population of the power model: E[π] and the unbiased E[π²] of k ≥ 2 attempts."""
    mean = sum(passed / total for passed, total in counts) / len(counts)
    second = sum(c * (c - 1) / (t * (t - 1)) for c, t in counts) / len(counts)
    return CasePopulation.of(mean, second)


def _expected(
    counts: list[tuple[int, int]], others: list[tuple[int, int]], k: int
) -> dict[str, Any]:
    rates = [passed / total for passed, total in counts]
    n = len(rates)
    p = sum(rates) / n
    se = math.sqrt(sum((s - p) ** 2 for s in rates) / (n * (n - 1))) if n > 1 else None
    m = p * (1 - p) / se**2 if se and 0 < p < 1 else n
    c = 1 + Z * Z / m
    centre = (p + Z * Z / (2 * m)) / c
    half = Z * math.sqrt(p * (1 - p) / m + Z * Z / (4 * m * m)) / c
    # the gate tests overall first: a group's drop is found beside the run's other cases
    rest = Rest(_population(others), len(others)) if others else None
    drop = detectable_drop(_population(counts), n, k, rest=rest) if n > 1 else None
    return {"pass_rate": p, "stderr": se, "ci95": [centre - half, centre + half], "drop": drop}


def _close(actual: Any, expected: Any) -> bool:
    if expected is None or actual is None:
        return actual is expected
    if isinstance(expected, list):
        return all(abs(a - b) <= 1e-3 for a, b in zip(actual, expected, strict=True))
    return abs(actual - expected) <= 1e-3


def test_every_rate_of_the_report_has_its_error_bars(baseline: Baseline) -> None:
    report = baseline.report.json()
    assert report["k"] == 2 and report["unrun"] == {"attempts": 0, "codes": {}}
    counts = _case_counts(baseline.run)
    groups = {
        **{
            ("suites", name): {i for i, (s, *_) in counts.items() if s == name}
            for name in report["suites"]
        },
        **{
            ("splits", name): {i for i, (_, sp, *_) in counts.items() if sp == name}
            for name in report["splits"]
        },
    }
    entries = {key: report[key[0]][key[1]] for key in groups}
    groups[("overall", "")] = set(counts)
    entries[("overall", "")] = report["overall"]
    for key, members in groups.items():
        values = [(c, t) for i, (_, _, c, t) in counts.items() if i in members]
        others = [(c, t) for i, (_, _, c, t) in counts.items() if i not in members]
        entry, expected = entries[key], _expected(values, others, report["k"])
        assert entry["cases"] == len(values), key
        assert entry["unrun_attempts"] == 0, key
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
    assert "p_holm" in comparison["overall"]
    assert comparison["inconclusive"] is False and comparison["unrun_cases"] == 0
    # b0 ran once per case, b1 twice: compared like with like on each case's first attempt
    assert comparison["unrun"]["run"] == {"attempts": 0, "codes": {}}


CASES = 8


def _project(root: Path, url: str, name: str = "gates", count: int = CASES) -> Path:
    cases = [{"id": f"g-{i:02d}", "input": f"Vraag {i} over bezwaar?"} for i in range(count)] + [
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
    suite, comparison = list(JUnitXml.fromfile(str(path)))
    cases = list(suite)
    assert [case.name for case in cases] == [*(f"g-{i:02d}" for i in range(CASES)), "test split"]
    assert all(not case.is_passed for case in cases)
    assert all(float(case.time) >= 0 for case in cases)
    assert "2 of 2 test cases" in cases[-1].result[0].message
    # the report compares bad with good: the comparison's testcase fails
    (against,) = list(comparison)
    assert (comparison.name, against.name) == ("comparison", "against run good")
    assert "regressed significantly: overall" in against.result[0].message


def test_plan_says_what_the_suite_detects(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    plain = invoke("plan", "--project", project, "--run", "bad")
    assert plain.status == 0 and "gates" in plain.out and "overall" in plain.out
    planned = invoke("plan", "--project", project, "--drop", "0.2", "--k", "3", "--json").json()
    assert planned["run_id"] == "fixed" and planned["k"] == 3 and planned["drop"] == 0.2
    assert planned["groups"]["gates"]["cases"] == CASES + 2


@pytest.mark.parametrize("options", [(), ("--fail-on-regression",), ("--json",)])
def test_the_first_night_has_nothing_to_compare_with_and_passes(
    gated: tuple[Path, Switch], options: tuple[str, ...]
) -> None:
    """`good` is the project's first run: the first night of a CI job has no baseline,
    which is no error of the project and no regression."""
    project, _ = gated
    result = invoke("compare", "good", "previous", *options, "--project", project)
    assert result.status == 0
    line = result.error_line()
    assert line.startswith("soev-evals: nothing to compare with: run 'good' has no earlier run")
    assert result.out == ""


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("compare", "nope", "good"), 1, "no run 'nope'"),
        (("compare", "good", "nope"), 1, "no run 'nope'"),
        (("compare", "good", "good"), 1, "its own baseline"),
        (("compare", "bad", "good", "--alpha", "0"), 2, "--alpha"),
        (("compare", "bad", "good", "--alpha", "1.5"), 2, "--alpha"),
        (("compare", "bad", "good", "--max-unrun", "1.5"), 2, "--max-unrun"),
        (("compare", "bad", "good", "--max-unrun", "veel"), 2, "--max-unrun"),
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


class Gateway:
    """An assistant that answers, or whose gateway answers 503 with a code of its own."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, text: str, history: list[str]) -> Reply | Response:
        if self.down:
            return problem(503, "service_unavailable", "upstream is down")
        return Reply("De termijn is zes weken.")


@contextmanager
def refusing_after_one() -> Iterator[str]:
    """A port that accepts one connection (the `run` command's reachability check) and
    then refuses every other: each attempt of the run fails with `connect_error`."""
    listener = socket.create_server(("127.0.0.1", 0))

    def accept_one() -> None:
        connection, _ = listener.accept()
        connection.close()
        listener.close()

    thread = threading.Thread(target=accept_one, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        if thread.is_alive():
            listener.close()
        thread.join()


@dataclass
class Outage:
    """The project of the outage runs, and what the `down` run printed."""

    project: Path
    down: Result


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Outage:
    """Runs `up` (all pass), `down` (the system refuses every connection: the run stops),
    `gateway` (every turn a 503 `service_unavailable`, also when run once more) and `again`
    (all pass) of one project."""
    root = tmp_path_factory.mktemp("outage")
    gateway = Gateway()
    with FakeThreadAPI(gateway) as system:
        project = _project(root / "p", system.url, name="storing")

        def point(url: str) -> None:
            edit_yaml(project, lambda data: data["system"].update(base_url=url))

        assert invoke("run", "--project", project, "--run-id", "up").status == 0
        with refusing_after_one() as nowhere:
            point(nowhere)
            down = invoke("run", "--project", project, "--run-id", "down")
        point(system.url)
        gateway.down = True
        assert invoke("run", "--project", project, "--run-id", "gateway").status == 0
        gateway.down = False
        assert invoke("run", "--project", project, "--run-id", "again").status == 0
    return Outage(project, down)


def test_a_run_that_cannot_connect_stops_and_is_never_compared(outage: Outage) -> None:
    """Every attempt of `down` failed to connect: the run stops with one line (exit 2) and
    is kept for a resume, with none of those attempts archived; it has no report, so no
    comparison ever reads it as a regression."""
    project, down = outage.project, outage.down
    assert down.status == 2, down.err
    line = down.error_line()
    assert f"the first {CASES + 2} attempts of run 'down' all failed with connect_error" in line
    assert "system.base_url http://127.0.0.1:" in line and "--resume down" in line
    run = project.parent / "runs" / "down"
    assert (run / "manifest.json").exists() and (run / "evidence.jsonl").read_bytes() == b""
    report = invoke("report", "down", "--project", project)
    assert report.status == 1 and "has no scoring yet" in report.error_line()
    gate = invoke("compare", "down", "up", "--project", project, "--fail-on-regression")
    assert gate.status == 1 and "has no scoring yet" in gate.error_line()
    down.assert_no_test_content()


def test_an_outage_makes_the_gate_inconclusive_not_failed(outage: Outage) -> None:
    project = outage.project
    gate = invoke("compare", "gateway", "up", "--project", project, "--fail-on-regression")
    assert gate.status == 4, gate.err
    assert "cannot decide" in gate.error_line()
    assert "service_unavailable 10" in gate.error_line()
    assert "inconclusive" in gate.out and "regressed" not in gate.out
    comparison = invoke("compare", "gateway", "up", "--project", project, "--json").json()
    assert comparison["inconclusive"] is True
    assert comparison["unrun"] == {
        "run": {"attempts": 10, "codes": {"service_unavailable": 10}},
        "baseline": {"attempts": 0, "codes": {}},
    }
    assert comparison["unrun_cases"] == CASES + 2 and comparison["overall"]["pairs"] == 0
    assert {g["verdict"] for g in (comparison["overall"], *comparison["suites"].values())} == {
        "inconclusive"
    }
    # a larger share allowed: nothing is left to compare
    allowed = invoke("compare", "gateway", "up", "--project", project, "--max-unrun", "1")
    assert allowed.status == 1 and "share no case" in allowed.error_line()
    gate.assert_no_test_content()


def test_a_503_with_a_code_of_its_own_did_not_run_either(outage: Outage) -> None:
    compared = invoke(
        "compare", "gateway", "up", "--project", outage.project, "--fail-on-regression"
    )
    assert compared.status == 4
    assert "run gateway: 10 attempts did not run (service_unavailable 10)" in compared.out


def test_an_inconclusive_run_is_never_the_previous_one(outage: Outage) -> None:
    project = outage.project
    report = invoke("report", "again", "--project", project, "--json").json()
    assert report["previous"]["baseline_id"] == "up"
    compared = invoke("compare", "again", "previous", "--project", project, "--json")
    assert compared.status == 0 and compared.json()["baseline_id"] == "up"
    # with every share allowed, the newest earlier run is the baseline again: the gateway
    # run, with which `again` shares no attempt that ran
    allowing = invoke("compare", "again", "previous", "--project", project, "--max-unrun", "1")
    assert allowing.status == 1
    assert "runs 'again' and 'gateway' share no case" in allowing.error_line()
    gateway = invoke("report", "gateway", "--project", project, "--json").json()
    assert gateway["inconclusive"] is True and gateway["overall"]["unrun_attempts"] == CASES + 2
    assert gateway["overall"]["pass_rate"] == 0.0
    gate = invoke("report", "gateway", "--project", project, "--fail-under", "0.5")
    assert gate.status == 4 and "cannot decide" in gate.error_line()
    assert "10 of 10 attempts did not run (service_unavailable 10)" in gate.out
    assert invoke("report", "again", "--project", project, "--fail-under", "0.5").status == 0


def test_an_attempt_run_once_more_counts_once(outage: Outage) -> None:
    """Every attempt of `gateway` got a 503, and again when it was run once more: two lines
    each in the archive, one attempt each in the report."""
    lines = (outage.project.parent / "runs" / "gateway" / "evidence.jsonl").read_text()
    assert len(lines.splitlines()) == 2 * (CASES + 2)
    report = invoke("report", "gateway", "--project", outage.project, "--json").json()
    assert report["overall"]["attempts"] == report["expected_attempts"] == CASES + 2
    assert report["unrun"] == {"attempts": CASES + 2, "codes": {"service_unavailable": 10}}


def test_an_outage_in_the_junit_file_is_an_error(outage: Outage, tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    assert invoke("report", "gateway", "--project", outage.project, "--junit", path).status == 0
    suite, comparison = list(JUnitXml.fromfile(str(path)))
    assert all(case.result[0]._tag == "error" for case in suite)
    (against,) = list(comparison)
    assert against.result[0]._tag == "error"
    assert against.result[0].message.startswith("inconclusive: too many attempts did not run")
    assert SECRET not in path.read_text(encoding="utf-8")


def test_plan_says_what_it_needs_for_a_first_run_of_one_attempt(outage: Outage) -> None:
    planned = invoke("plan", "--project", outage.project, "--run", "up", "--json")
    assert planned.status == 0, planned.err
    gates = planned.json()["groups"]["gates"]
    assert gates["detectable_drop"] is None and gates["cases_needed"] is None
    assert "earlier run" in gates["needs"]
    text = invoke("plan", "--project", outage.project, "--run", "up").out
    assert "gates: cannot tell yet; needs an earlier run" in text


HIDDEN = 130
FIVE_HUNDREDS = 6
"""Of HIDDEN dev cases (and 2 test cases) the assistant answers these with HTTP 500: 6 of 132
attempts, 4.5 %, fewer than the 5 % that make a comparison inconclusive."""


class FiveHundreds:
    """An assistant that answers every question, or, once `failing` is set, answers HTTP 500
    instead of a correct answer to the first FIVE_HUNDREDS."""

    def __init__(self) -> None:
        self.failing = False

    def __call__(self, text: str, history: list[str]) -> Reply | Response:
        number = int(text.split()[1]) if text.startswith("Vraag ") else HIDDEN
        if self.failing and number < FIVE_HUNDREDS:
            return problem(500, "internal", "kapot")
        return Reply("De termijn is zes weken.")


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs `goed` (every answer passes) and `verborgen` (6 answers are a 500 instead) of a
    project in `evals/`, as the CI templates of docs/ci.md expect it."""
    root = tmp_path_factory.mktemp("hidden")
    assistant = FiveHundreds()
    with FakeThreadAPI(assistant) as system:
        project = _project(root / "evals", system.url, name="verborgen", count=HIDDEN)
        assert invoke("run", "--project", project, "--run-id", "goed").status == 0
        assistant.failing = True
        assert invoke("run", "--project", project, "--run-id", "verborgen").status == 0
    return project


def test_a_5xx_that_could_hide_a_regression_leaves_the_gate_undecided(hidden: Path) -> None:
    project = hidden
    gate = invoke("compare", "verborgen", "goed", "--project", project, "--fail-on-regression")
    assert gate.status == 4, gate.err
    why = gate.error_line()
    assert why.startswith("soev-evals: the quality gate cannot decide: the attempts that did")
    assert "could hide a regression in overall, suite gates, split dev" in why
    assert "run verborgen (6 attempts did not run (internal 6))" in why
    assert "run the suites again and compare again" in why
    assert "inconclusive: the attempts that did not run could hide a regression" in gate.out
    assert "worst case Δ (p)" in gate.out and "-4.5 pt (0.031)" in gate.out
    gate.assert_no_test_content()
    # the same comparison without the gate option did its work
    assert invoke("compare", "verborgen", "goed", "--project", project).status == 0
    compared = invoke("compare", "verborgen", "goed", "--project", project, "--json").json()
    assert compared["inconclusive"] is False and compared["unrun_cases"] == FIVE_HUNDREDS
    assert compared["unrun"]["run"] == {"attempts": 6, "codes": {"internal": 6}}
    overall = compared["overall"]
    assert (overall["pairs"], overall["delta"], overall["p_holm"]) == (HIDDEN + 2 - 6, 0.0, 1.0)
    assert overall["worst_case_delta"] == pytest.approx(-6 / (HIDDEN + 2))
    assert overall["worst_case_p_holm"] == pytest.approx(2 / 64)
    verdicts = {
        name: (group["verdict"], group["reason"])
        for name, group in [
            ("overall", overall),
            *compared["suites"].items(),
            *(("split " + k, g) for k, g in compared["splits"].items()),
        ]
    }
    hides = ("inconclusive", "unrun_could_hide_regression")
    assert verdicts == {
        "overall": hides,
        "gates": hides,
        "split dev": hides,
        "split test": ("unchanged", None),
    }
    # the report's previous is the same comparison object
    report = invoke("report", "verborgen", "--project", project, "--json").json()
    assert report["previous"] == compared
    assert report["inconclusive"] is False  # 4.5 % did not run: the run itself can be read


def test_every_attempt_ran_and_no_bound_is_shown(gated: tuple[Path, Switch]) -> None:
    project, _ = gated
    compared = invoke("compare", "fixed", "good", "--project", project, "--json").json()
    for group in (compared["overall"], *compared["suites"].values(), *compared["splits"].values()):
        assert (group["worst_case_delta"], group["worst_case_p_holm"]) == (None, None)
        assert group["reason"] is None
    plain = invoke("compare", "fixed", "good", "--project", project).out
    assert "worst case" not in plain and "could hide" not in plain


def _workflow_step(name: str) -> str:
    """The shell script of the step `name` of the GitHub Actions workflow in docs/ci.md."""
    text = (Path(__file__).parents[2] / "docs" / "ci.md").read_text(encoding="utf-8")
    workflow = text.split("# .github/workflows/soev-nightly.yml")[1].split("```")[0]
    steps = yaml.safe_load(workflow)["jobs"]["evaluate"]["steps"]
    (step,) = [step for step in steps if step.get("name") == name]
    return str(step["run"])


def test_the_ci_templates_warn_when_a_5xx_could_hide_a_regression(
    hidden: Path, tmp_path: Path
) -> None:
    """docs/ci.md: GitLab allows exit 4 as a warning; the GitHub step turns it into a warning
    annotation and a line of the job summary that say why and what to do, and goes on."""
    text = (Path(__file__).parents[2] / "docs" / "ci.md").read_text(encoding="utf-8")
    gitlab = yaml.safe_load(text.split("# .gitlab-ci.yml")[1].split("```")[0])
    assert gitlab["soev-nightly"]["allow_failure"] == {"exit_codes": [4]}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "soev-evals"
    stub.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m soev_pipeline "$@"\n', "utf-8")
    stub.chmod(0o755)
    summary = tmp_path / "summary.md"
    environment = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "RUN": "verborgen",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", _workflow_step("Compare with the previous night")],
        cwd=hidden.parents[1],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (warning,) = [line for line in done.stdout.splitlines() if line.startswith("::warning")]
    assert warning.startswith("::warning title=soev gate could not decide::the quality gate")
    assert "could hide a regression in overall" in warning
    assert "run the suites again and compare again" in warning
    assert "could hide a regression" in summary.read_text(encoding="utf-8")


class Varying:
    """An assistant whose answers vary between attempts: of the calls for question q, the
    j-th passes when j < q % 4 in suite `a`, and when j < 3 − q % 3 in suite `b`."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, text: str, history: list[str]) -> Reply:
        with self.lock:
            j = self.calls[text]
            self.calls[text] += 1
        suite, number = text.split()[1], int(text.split()[2].rstrip("?"))
        passes = number % 4 if suite == "a" else 3 - number % 3
        return Reply("De termijn is zes weken.") if j < passes else Reply(failure="kapot")


@pytest.fixture(scope="module")
def varying(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run `wisselend` at k = 3 of two suites of 30 cases each, whose cases pass 0 to 3 of
    their attempts."""
    root = tmp_path_factory.mktemp("varying")
    for suite in ("a", "b"):
        cases = [{"id": f"{suite}-{i:02d}", "input": f"Vraag {suite} {i}?"} for i in range(30)]
        dump(
            root / "suites" / f"{suite}.yaml",
            {
                "suite": suite,
                "criteria": [{"kind": "run.no_failure", "gate": True}],
                "cases": cases,
            },
        )
    with FakeThreadAPI(Varying()) as system:
        dump(
            root / "project.yaml",
            {
                "name": "wisselend",
                "system": {"base_url": system.url, "agent": "a", "max_retries": 0},
                "suites": [{"name": s, "files": f"suites/{s}.yaml"} for s in ("a", "b")],
            },
        )
        project = root / "project.yaml"
        result = invoke("run", "--project", project, "--run-id", "wisselend", "--k", "3")
        assert result.status == 0, result.err
    return project


def test_a_suites_power_is_the_gates_beside_the_rest_of_the_run(varying: Path) -> None:
    """docs/statistics.md#power-what-a-suite-detects-and-how-many-cases-it-needs: a suite's
    drop fails the gate when the whole run's sign test finds it, beside the other suite."""
    counts = _case_counts(varying.parent / "runs" / "wisselend")
    by_suite = {
        name: [(c, t) for s, _, c, t in counts.values() if s == name] for name in ("a", "b")
    }
    assert sorted({c for c, _ in by_suite["a"]}) == [0, 1, 2, 3]  # the attempts do vary
    a, b = _population(by_suite["a"]), _population(by_suite["b"])
    stated = detectable_drop(a, 30, 3, rest=Rest(b, 30))
    alone = detectable_drop(a, 30, 3)
    assert stated is not None and alone is not None and stated > alone + 0.05
    report = invoke("report", "wisselend", "--project", varying, "--json").json()
    assert report["suites"]["a"]["detectable_drop"] == pytest.approx(stated, abs=1e-6)
    overall = detectable_drop(_population(by_suite["a"] + by_suite["b"]), 60, 3)
    assert report["overall"]["detectable_drop"] == pytest.approx(overall, abs=1e-6)
    planned = invoke("plan", "--project", varying, "--json").json()["groups"]
    assert planned["a"]["detectable_drop"] == pytest.approx(stated, abs=1e-6)
    assert planned["a"]["cases_needed"] == cases_needed(a, 0.1, 3, rest=Rest(b, 30))
    assert planned["overall"]["cases_needed"] == cases_needed(
        _population(by_suite["a"] + by_suite["b"]), 0.1, 3
    )
    text = invoke("plan", "--project", varying).out
    assert "a suite's is found only when it moves the whole run" in text
