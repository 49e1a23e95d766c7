"""The plain tables of the figures of docs/statistics.md: what they say about small groups,
attempts that did not run, inconclusive comparisons and plans that cannot answer yet."""

from __future__ import annotations

from soev_pipeline.cli.render import (
    FAILING_CASES_SHOWN,
    render_comparison,
    render_plan,
    render_report,
)
from soev_pipeline.run import GradedAttempt, GradingSummary, build_manifest, build_report
from soev_pipeline.run.compare import compare_rates
from soev_pipeline.run.plan import GroupPlan
from soev_pipeline.run.results import UnrunTally
from soev_pipeline.run.run_attempts import CaseAttempts, RunAttempts


def _summary() -> GradingSummary:
    return GradingSummary(
        scoring="0001",
        created_at="2026-01-01T00:00:00+00:00",
        attempts=3,
        skipped=0,
        statuses={"pass": 0, "fail": 0, "error": 0, "not_applicable": 0},
        criterion_versions={},
        prompts={},
        offline=False,
        judge=None,
    )


def test_a_report_names_small_groups_and_the_attempts_that_did_not_run() -> None:
    manifest = build_manifest(
        run_id="r1", project="p", suites=["kern"], split=None, k=2, cases=[], shas={}
    ).model_copy(update={"cases": {"a": "da", "b": "db", "c": "dc"}})
    graded = [
        GradedAttempt(
            case_id=case_id,
            suite="kern",
            split="dev",
            attempt=0,
            score=None,
            passed=True,
            verdicts=(),
        )
        for case_id in "abc"
    ]
    text = render_report(build_report(manifest, graded, scoring=_summary()))
    assert "fewer than 5 cases: suite kern (3), split dev (3), overall (3)" in text
    assert "attempts that did not run: 3 of 6 attempts did not run (interrupted 3)" in text
    assert "inconclusive: more than 5 % of the attempts did not run" in text
    assert "    attempt 1: did not run: interrupted" in text


def _run(run_id: str, passes: bool, unrun: int) -> RunAttempts:
    cases = {f"c{i}": CaseAttempts("kern", "dev", "d", (passes,)) for i in range(6)}
    tally = UnrunTally(attempts=unrun, codes={"connect_error": unrun} if unrun else {})
    return RunAttempts(run_id, "p", ("kern",), 1, cases, 6 + unrun, tally)


def test_an_inconclusive_comparison_says_why() -> None:
    text = render_comparison(compare_rates(_run("now", False, 2), _run("before", True, 0)))
    assert "run now: 2 attempts did not run (connect_error 2); baseline before: every" in text
    assert "inconclusive: too many attempts did not run" in text
    assert "fewer than" not in text
    assert "regressed" not in text.split("dev cases that regressed")[0].split("verdict")[1]


def test_a_plan_says_what_it_needs() -> None:
    groups = [
        GroupPlan("kern", 10, 0.5, None, None, None, "a second run", None),
        GroupPlan("overall", 10, 0.5, 0.3, None, "attempts", None, "more than 100000 cases"),
    ]
    text = render_plan(groups, run_id="r1", run_k=1, k=1, drop=0.1)
    assert "kern: cannot tell yet; needs a second run" in text
    assert "overall: no number of cases: more than 100000 cases" in text
    assert "30.0 pt" in text


def _hidden(failing: int) -> tuple[RunAttempts, RunAttempts]:
    now = {
        f"c{i:03d}": CaseAttempts(
            "kern", "dev", "d", () if i < failing else (True,), int(i < failing)
        )
        for i in range(130)
    }
    before = {case_id: CaseAttempts("kern", "dev", "d", (True,)) for case_id in now}
    tally = UnrunTally(attempts=failing, codes={"http_500": failing})
    return (
        RunAttempts("now", "p", ("kern",), 1, now, 130, tally),
        RunAttempts("before", "p", ("kern",), 1, before, 130, UnrunTally()),
    )


def test_a_comparison_says_what_the_attempts_that_did_not_run_could_hide() -> None:
    text = render_comparison(compare_rates(*_hidden(6)))
    header, row = text.splitlines()[2:4]
    assert "worst case Δ (p)" in header and "-4.6 pt (0.031)" in row and "inconclusive" in row
    assert "inconclusive: the attempts that did not run could hide a regression in overall" in text
    assert "run the suites again and compare again" in text
    harmless = render_comparison(compare_rates(*_hidden(2)))
    assert "the attempts that did not run cannot hide a regression" in harmless
    assert "-1.5 pt (0.500)" in harmless
    every = render_comparison(compare_rates(_hidden(0)[1], _hidden(0)[1]))
    assert "worst case" not in every and "hide" not in every


def test_the_text_report_lists_the_first_failing_cases_and_counts_the_rest() -> None:
    manifest = build_manifest(
        run_id="r1", project="p", suites=["kern"], split=None, k=1, cases=[], shas={}
    ).model_copy(update={"cases": {f"c{i:03d}": f"d{i}" for i in range(FAILING_CASES_SHOWN + 7)}})
    graded = [
        GradedAttempt(
            case_id=f"c{i:03d}",
            suite="kern",
            split="dev",
            attempt=0,
            score=0.0,
            passed=False,
            verdicts=(),
        )
        for i in range(FAILING_CASES_SHOWN + 7)
    ]
    text = render_report(build_report(manifest, graded, scoring=_summary()))
    assert f"dev cases that did not pass every attempt ({FAILING_CASES_SHOWN + 7}):" in text
    listed = [line for line in text.splitlines() if line.startswith("  c")]
    assert len(listed) == FAILING_CASES_SHOWN
    assert (
        "  … and 7 more: `report r1 --json` lists every case, `soev-evals view` shows them" in text
    )


def test_a_table_aligns_names_left_and_figures_right_without_pandas() -> None:
    from soev_pipeline.cli.render import _table

    rows = [
        {"group": "kern", "cases": 12, "rate": "77.8 % [54.1–91.2]"},
        {"group": "privacy-long", "cases": 3, "rate": None},
    ]
    assert _table(rows, ["group", "cases", "rate"]).splitlines() == [
        "group         cases                rate",
        "kern             12  77.8 % [54.1–91.2]",
        "privacy-long      3                   —",
    ]
    assert _table([], ["suite"]) == "(no suite with attempts)"
