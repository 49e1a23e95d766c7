"""`soev-evals plan`: what each group detects, from the attempts of a run or, at one attempt
per case, from its comparison with the run before it."""

from __future__ import annotations

import pytest

from soev_pipeline.core.power import CasePopulation, Rest, cases_needed, detectable_drop
from soev_pipeline.run.compare import compare_rates
from soev_pipeline.run.plan import group_drop, group_population, plan
from soev_pipeline.run.run_attempts import CaseAttempts, RunAttempts


def _run(run_id: str, cases: dict[str, tuple[str, tuple[bool, ...]]], k: int) -> RunAttempts:
    attempts = {
        case_id: CaseAttempts(suite, "dev", f"d-{case_id}", passes)
        for case_id, (suite, passes) in cases.items()
    }
    return RunAttempts(run_id, "p", ("kern", "scope"), k, attempts, k * len(cases))


def test_with_three_attempts_the_variance_comes_from_the_attempts() -> None:
    patterns = [(True, True, True), (True, False, True), (False, False, False), (True, True, False)]
    run = _run("r1", {f"c{i}": ("kern", patterns[i % 4]) for i in range(40)}, k=3)
    kern, scope, overall = plan(run, ["kern", "scope"], k=3, drop=0.2)
    # μ = (1 + 2/3 + 0 + 2/3) / 4 = 7/12; E[π²] = (1 + 1/3 + 0 + 1/3) / 4 = 5/12
    population = CasePopulation.of(7 / 12, 5 / 12)
    assert (kern.cases, kern.variance_from, kern.needs) == (40, "attempts", None)
    assert kern.pass_rate == pytest.approx(7 / 12)
    assert kern.detectable_drop == pytest.approx(detectable_drop(population, 40, 3), abs=1e-6)
    assert kern.cases_needed == cases_needed(population, 0.2, 3)
    assert kern.detectable_drop == group_drop(run, list(run.cases), None, None)
    assert (scope.cases, scope.detectable_drop, scope.needs) == (0, None, "at least 2 cases")
    assert overall.name == "overall" and overall.cases == 40
    # asked for another k, only the cases needed change
    one = plan(run, ["kern"], k=1, drop=0.2)[0]
    assert one.detectable_drop == kern.detectable_drop
    assert one.cases_needed == cases_needed(population, 0.2, 1)
    assert one.cases_needed is not None and kern.cases_needed is not None
    assert one.cases_needed > kern.cases_needed


def test_with_one_attempt_the_plan_needs_a_comparison() -> None:
    cases = {f"c{i}": ("kern", (i < 6,)) for i in range(10)}
    run = _run("r2", cases, k=1)
    (kern,) = plan(run, [], k=1)[:1]
    assert kern.name == "overall" and kern.needs is not None and "earlier run" in kern.needs
    assert (kern.detectable_drop, kern.cases_needed, kern.variance_from) == (None, None, None)
    # the run before it: one case went from fail to pass, one from pass to fail
    before = _run("r1", {**cases, "c0": ("kern", (False,)), "c9": ("kern", (True,))}, k=1)
    comparison = compare_rates(run, before)
    kern, _ = plan(run, ["kern"], k=1, drop=0.3, comparison=comparison)
    # 2 of 10 pairs changed at μ = 0.6: E[π²] = 0.6 − 2/20 = 0.5
    population = CasePopulation.of(0.6, 0.5)
    assert group_population([], 1, comparison.overall) == population
    assert kern.variance_from == "comparison with run r1"
    assert kern.detectable_drop == detectable_drop(population, 10, 1)
    assert kern.cases_needed == cases_needed(population, 0.3, 1)


def test_a_drop_larger_than_the_pass_rate_needs_no_number_of_cases() -> None:
    run = _run("r1", {f"c{i}": ("kern", (i % 5 == 0, False)) for i in range(20)}, k=2)
    (kern,) = plan(run, ["kern"], k=2, drop=0.5)[:1]
    assert kern.cases_needed is None and kern.note is not None and "larger" in kern.note


def test_a_drop_outside_zero_and_one_and_a_k_below_one_are_refused() -> None:
    run = _run("r1", {}, k=1)
    with pytest.raises(ValueError, match="drop"):
        plan(run, [], k=1, drop=1.0)
    with pytest.raises(ValueError, match="k must"):
        plan(run, [], k=0)


def test_a_suite_is_planned_beside_the_rest_of_the_run() -> None:
    # kern: 20 cases of pattern P P F (μ = 2/3, E[π²] = 1/3); scope: 30 cases that always
    # pass (μ = E[π²] = 1). The gate tests overall first, so kern's drop must show in all 50.
    kern = {f"k{i}": ("kern", (True, True, False)) for i in range(20)}
    scope = {f"s{i}": ("scope", (True, True, True)) for i in range(30)}
    run = _run("r1", {**kern, **scope}, k=3)
    planned, steady, overall = plan(run, ["kern", "scope"], k=3, drop=0.2)
    population = CasePopulation.of(2 / 3, 1 / 3)
    rest = Rest(CasePopulation.of(1.0, 1.0), 30)
    assert planned.detectable_drop == pytest.approx(
        detectable_drop(population, 20, 3, rest=rest), abs=1e-9
    )
    assert planned.cases_needed == cases_needed(population, 0.2, 3, rest=rest)
    # the scope cases never change: beside them kern is as if alone
    assert planned.detectable_drop == pytest.approx(detectable_drop(population, 20, 3), abs=1e-9)
    # scope beside kern, whose cases vary: a drop of scope must outweigh that noise
    alone = detectable_drop(CasePopulation.of(1.0, 1.0), 30, 3)
    assert steady.detectable_drop is not None and alone is not None
    assert steady.detectable_drop > alone
    assert overall.cases == 50


def test_at_one_attempt_the_rest_varies_as_the_comparison_says() -> None:
    # 40 cases in kern and 40 in scope; the comparison changed 8 kern pairs and 2 scope pairs
    before = {f"k{i}": ("kern", (i % 2 == 0,)) for i in range(40)}
    before |= {f"s{i}": ("scope", (i % 2 == 0,)) for i in range(40)}
    now = dict(before)
    for i in range(4):
        now[f"k{2 * i}"], now[f"k{2 * i + 1}"] = ("kern", (False,)), ("kern", (True,))
    now["s0"], now["s1"] = ("scope", (False,)), ("scope", (True,))
    run, previous = _run("r2", now, k=1), _run("r1", before, k=1)
    comparison = compare_rates(run, previous)
    kern, _, _ = plan(run, ["kern", "scope"], k=1, drop=0.2, comparison=comparison)
    # kern: μ = ½, 8 of 40 changed: E[π²] = ½ − 8/80; the rest (scope): 2 of 40 changed
    population = CasePopulation.of(0.5, 0.5 - 8 / 80)
    rest = Rest(CasePopulation.of(0.5, 0.5 - 2 / 80), 40)
    assert kern.detectable_drop == detectable_drop(population, 40, 1, rest=rest)


def test_a_few_cases_say_too_little_for_a_number_of_cases() -> None:
    run = _run("r1", {f"c{i}": ("kern", (True, i % 2 == 0, False)) for i in range(4)}, k=3)
    (kern,) = plan(run, ["kern"], k=3, drop=0.2)[:1]
    assert kern.cases_needed is None and kern.note is not None and "fewer than 5" in kern.note
