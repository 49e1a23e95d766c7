"""The plain tables of the figures of docs/statistics.md: what they say about small groups,
attempts that did not run, inconclusive comparisons and plans that cannot answer yet."""

from __future__ import annotations

from soev_pipeline.cli.render import render_comparison, render_plan, render_report
from soev_pipeline.run import GradedAttempt, GradingSummary, build_manifest, build_report
from soev_pipeline.run.compare import CaseAttempts, RunAttempts, compare_rates
from soev_pipeline.run.plan import GroupPlan
from soev_pipeline.run.results import UnrunTally


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
