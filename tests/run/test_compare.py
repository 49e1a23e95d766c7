"""Comparing two runs (SPEC.md section 10): pairing, groups, Holm, verdicts, dev-only names."""

from __future__ import annotations

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.compare import CaseRate, RunRates, compare_rates


def _run(
    run_id: str, cases: dict[str, tuple[str, str, str, float]], project: str = "p"
) -> RunRates:
    rates = {
        case_id: CaseRate(suite, split, digest, rate)  # type: ignore[arg-type]
        for case_id, (suite, split, digest, rate) in cases.items()
    }
    return RunRates(run_id, project, ("kern", "privacy"), rates)


def _flips(count: int, suite: str, split: str = "dev", before: float = 1.0, now: float = 0.0):
    return {
        f"{suite}-{split}-{i:02d}": (
            (suite, split, f"d-{suite}-{i}", now),
            (suite, split, f"d-{suite}-{i}", before),
        )
        for i in range(count)
    }


def test_pairs_need_the_same_digest_and_both_runs() -> None:
    now = _run(
        "b",
        {
            "a": ("kern", "dev", "x", 1.0),
            "b": ("kern", "dev", "y2", 1.0),
            "c": ("kern", "dev", "z", 0.0),
        },
    )
    before = _run(
        "a",
        {
            "a": ("kern", "dev", "x", 0.0),
            "b": ("kern", "dev", "y1", 0.0),
            "d": ("kern", "dev", "w", 1.0),
        },
    )
    comparison = compare_rates(now, before)
    assert (comparison.changed_cases, comparison.unpaired_cases) == (1, 2)
    assert comparison.overall.pairs == 1
    assert [change.case_id for change in comparison.improvements] == ["a"]
    assert (comparison.run_id, comparison.baseline_id, comparison.alpha) == ("b", "a", 0.05)


def _pair_runs(groups: dict[str, tuple[tuple[str, str, str, float], tuple[str, str, str, float]]]):
    now = _run("now", {case_id: pair[0] for case_id, pair in groups.items()})
    before = _run("before", {case_id: pair[1] for case_id, pair in groups.items()})
    return now, before


def test_six_flips_regress_overall_and_their_suite_after_holm() -> None:
    # kern: 6 of 6 cases fail now: sign test 2/64 = 0.03125; privacy unchanged: p = 1
    # Holm over two suites: kern 2 · 0.03125 = 0.0625, so kern alone is not significant,
    # while the overall group (p = 0.03125) is.
    cases = {**_flips(6, "kern"), **_flips(4, "privacy", now=1.0)}
    comparison = compare_rates(*_pair_runs(cases))
    assert comparison.overall.verdict == "regressed"
    assert comparison.overall.p_value == pytest.approx(0.03125)
    kern = comparison.suites["kern"]
    assert kern.p_value == pytest.approx(0.03125) and kern.p_holm == pytest.approx(0.0625)
    assert kern.verdict == "unchanged"
    assert comparison.suites["privacy"].p_holm == pytest.approx(1.0)
    assert comparison.splits["dev"].verdict == "regressed"
    assert comparison.regressed
    assert "p_holm" not in comparison.overall.model_dump()
    assert "p_holm" in comparison.suites["kern"].model_dump()


def test_a_suite_regresses_on_its_own_when_holm_allows() -> None:
    comparison = compare_rates(*_pair_runs({**_flips(8, "kern"), **_flips(3, "privacy", now=1.0)}))
    assert comparison.suites["kern"].p_holm == pytest.approx(2 * 2 / 256)
    assert comparison.suites["kern"].verdict == "regressed"


def test_alpha_moves_the_verdict() -> None:
    cases = _flips(6, "kern")
    assert compare_rates(*_pair_runs(cases), alpha=0.01).overall.verdict == "unchanged"
    improved = compare_rates(*_pair_runs(_flips(6, "kern", before=0.0, now=1.0)))
    assert improved.overall.verdict == "improved" and not improved.regressed


def test_test_cases_count_in_groups_but_are_never_named() -> None:
    cases = {**_flips(2, "kern"), **_flips(3, "kern", split="test")}
    comparison = compare_rates(*_pair_runs(cases))
    assert comparison.overall.regressed == 5
    assert comparison.splits["test"].regressed == 3
    named = [change.case_id for change in comparison.regressions]
    assert named == ["kern-dev-00", "kern-dev-01"]
    assert all(
        change.pass_rate == 0.0 and change.baseline_pass_rate == 1.0
        for change in comparison.regressions
    )


def test_fractional_rates_pair_by_difference() -> None:
    cases = {
        "a": (("kern", "dev", "a", 2 / 3), ("kern", "dev", "a", 1.0)),
        "b": (("kern", "dev", "b", 1 / 3), ("kern", "dev", "b", 1 / 3)),
    }
    comparison = compare_rates(*_pair_runs(cases))
    overall = comparison.overall
    assert (overall.improved, overall.regressed, overall.unchanged) == (0, 1, 1)
    assert overall.delta == pytest.approx(-1 / 6)
    assert overall.stderr == pytest.approx(1 / 6)  # sd of (−1/3, 0) / sqrt 2


def test_runs_of_another_project_do_not_compare() -> None:
    with pytest.raises(ProjectError, match="belongs to project 'q'"):
        compare_rates(_run("b", {}), _run("a", {}, project="q"))
