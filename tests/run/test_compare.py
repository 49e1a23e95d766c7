"""Comparing two runs (docs/statistics.md#two-runs-paired-differences-and-the-sign-test):
pairing like with like, one Holm family, attempts that did not run, inconclusive comparisons,
dev-only names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.compare import compare_rates, paired_attempts
from soev_pipeline.run.results import UnrunTally
from soev_pipeline.run.run_attempts import CaseAttempts, RunAttempts

P = True
F = False


def _case(
    passes: Sequence[bool],
    *,
    suite: str = "kern",
    split: str = "dev",
    digest: str = "d",
    unrun: int = 0,
) -> CaseAttempts:
    return CaseAttempts(suite, split, digest, tuple(passes), unrun)  # type: ignore[arg-type]


def _run(
    run_id: str,
    cases: Mapping[str, CaseAttempts],
    *,
    k: int = 1,
    planned: int | None = None,
    codes: Mapping[str, int] | None = None,
    project: str = "p",
) -> RunAttempts:
    unrun = UnrunTally(attempts=sum((codes or {}).values()), codes=dict(codes or {}))
    total = planned if planned is not None else sum(case.attempts for case in cases.values())
    return RunAttempts(run_id, project, ("kern", "privacy"), k, cases, total, unrun)


def _flips(
    count: int, suite: str, split: str = "dev", before: bool = P, now: bool = F
) -> dict[str, tuple[CaseAttempts, CaseAttempts]]:
    return {
        f"{suite}-{split}-{i:02d}": (
            _case([now], suite=suite, split=split, digest=f"d-{suite}-{i}"),
            _case([before], suite=suite, split=split, digest=f"d-{suite}-{i}"),
        )
        for i in range(count)
    }


def _pair_runs(
    pairs: Mapping[str, tuple[CaseAttempts, CaseAttempts]],
) -> tuple[RunAttempts, RunAttempts]:
    now = _run("now", {case_id: pair[0] for case_id, pair in pairs.items()})
    before = _run("before", {case_id: pair[1] for case_id, pair in pairs.items()})
    return now, before


def test_pairs_need_the_same_digest_both_runs_and_an_attempt_that_ran_in_each() -> None:
    now = _run(
        "b",
        {
            "a": _case([P], digest="x"),
            "b": _case([P], digest="y2"),
            "c": _case([F], digest="z"),
            "e": _case([], digest="v", unrun=1),
        },
    )
    before = _run(
        "a",
        {
            "a": _case([F], digest="x"),
            "b": _case([F], digest="y1"),
            "d": _case([P], digest="w"),
            "e": _case([P], digest="v"),
        },
    )
    comparison = compare_rates(now, before, max_unrun=1.0)
    assert (comparison.changed_cases, comparison.unpaired_cases) == (1, 2)
    assert comparison.unrun_cases == 1
    assert comparison.overall.pairs == 1
    assert [change.case_id for change in comparison.improvements] == ["a"]
    assert (comparison.run_id, comparison.baseline_id, comparison.alpha) == ("b", "a", 0.05)


def test_runs_with_different_k_compare_the_first_attempts_alike() -> None:
    # a: now P,F,F against P: m = 1, so 1 against 1 (over all three it would be 1/3 against 1)
    # b: now F,P,P against P: m = 1, 0 against 1; c: now P,P,F against F,P,P (k = 3 both): m = 3
    # d: two attempts did not run now, the one that ran passed; baseline F,P: m = 1, 1 against 0
    now = _run(
        "now",
        {
            "a": _case([P, F, F]),
            "b": _case([F, P, P]),
            "c": _case([P, P, F]),
            "d": _case([P], unrun=2),
        },
        k=3,
    )
    before = _run(
        "before",
        {"a": _case([P]), "b": _case([P]), "c": _case([F, P, P]), "d": _case([F, P])},
        k=3,
    )
    comparison = compare_rates(now, before, max_unrun=1.0)
    overall = comparison.overall
    assert (overall.improved, overall.regressed, overall.unchanged) == (1, 1, 2)
    assert overall.pass_rate == pytest.approx((1 + 0 + 2 / 3 + 1) / 4)
    assert overall.baseline_pass_rate == pytest.approx((1 + 1 + 2 / 3 + 0) / 4)
    assert overall.delta == pytest.approx(0.0)
    assert [c.case_id for c in comparison.regressions] == ["b"]
    assert [(c.case_id, c.pass_rate, c.baseline_pass_rate) for c in comparison.improvements] == [
        ("d", 1.0, 0.0)
    ]


def test_the_paired_attempts_are_the_first_that_ran_in_each_and_give_the_rates() -> None:
    # kern-024: one attempt that passed against three of which one passed (33.3 %): the
    # comparison pairs attempt 0 with attempt 0, 100 % against 0 %.
    now, before = _case([F, P, F]), _case([P])
    assert paired_attempts(now, before) == ((0,), (0,))
    (change,) = compare_rates(_run("now", {"k": now}), _run("b", {"k": before})).regressions
    assert (change.pass_rate, change.baseline_pass_rate) == (0.0, 1.0)
    # attempt 0 did not run now: the pairs are attempts 1 and 2 against 0 and 1
    gap = CaseAttempts("kern", "dev", "d", (P, F), 1, unrun_at=(0,))
    assert paired_attempts(gap, _case([P, P, P])) == ((1, 2), (0, 1))
    assert paired_attempts(_case([], unrun=1), _case([P])) == ((), ())


def test_the_regressed_dev_cases_are_the_regressed_pairs_of_the_dev_split() -> None:
    pairs = {**_flips(3, "kern"), **_flips(2, "kern", "test"), **_flips(1, "privacy", now=P)}
    comparison = compare_rates(*_pair_runs(pairs))
    assert comparison.overall.regressed == 5
    assert len(comparison.regressions) == comparison.splits["dev"].regressed == 3


def test_overall_is_tested_first_at_full_alpha() -> None:
    # kern: 6 of 6 cases fail now: sign test 2/64 = 0.03125 in overall, kern and split dev.
    # Overall comes first, alone: 0.03125 < 0.05. Split dev holds the same pairs as overall
    # (one hypothesis, tested once); kern is the only other: Holm over one leaves it as it is.
    # privacy has no changed pair (p = 1) and stays out of the family.
    cases = {**_flips(6, "kern"), **_flips(4, "privacy", now=P)}
    comparison = compare_rates(*_pair_runs(cases))
    for group in (comparison.overall, comparison.suites["kern"], comparison.splits["dev"]):
        assert group.p_value == pytest.approx(0.03125)
        assert group.p_holm == pytest.approx(0.03125)
        assert group.verdict == "regressed"
    privacy = comparison.suites["privacy"]
    assert (privacy.p_value, privacy.p_holm, privacy.verdict) == (1.0, 1.0, "unchanged")
    assert comparison.regressed and comparison.gate == "failed"
    assert "p_holm" in comparison.overall.model_dump()


def test_the_other_groups_are_tested_only_once_overall_is_significant() -> None:
    # kern loses 8 cases, privacy gains 8: overall 8 against 8, p = 1. kern alone would
    # have p = 2/256, but the family stops at overall: every p_holm is at least overall's.
    cases = {**_flips(8, "kern"), **_flips(8, "privacy", before=F, now=P)}
    comparison = compare_rates(*_pair_runs(cases))
    assert comparison.suites["kern"].p_value == pytest.approx(2 / 256)
    assert {group.p_holm for group in comparison.groups().values()} == {1.0}
    assert {group.verdict for group in comparison.groups().values()} == {"unchanged"}
    assert comparison.gate == "passed"


def test_holm_over_the_other_groups_once_overall_is_significant() -> None:
    # kern dev 8 down, privacy dev 3 down, kern test 2 down: overall 13 down, p = 2/8192.
    # The others, Holm over four: split dev 11 down (2/2048) × 4, kern 10 down (2/1024) × 3,
    # privacy 3 down (0.25) × 2, split test 2 down (0.5) × 1, each at least the one before.
    cases = {**_flips(8, "kern"), **_flips(3, "privacy"), **_flips(2, "kern", "test")}
    comparison = compare_rates(*_pair_runs(cases))
    holm = {name: group.p_holm for name, group in comparison.groups().items()}
    assert holm == {
        "overall": pytest.approx(2 / 8192),
        "suite kern": pytest.approx(3 * 2 / 1024),
        "suite privacy": pytest.approx(0.5),
        "split dev": pytest.approx(4 * 2 / 2048),
        "split test": pytest.approx(0.5),
    }
    verdicts = {name: group.verdict for name, group in comparison.groups().items()}
    assert verdicts == {
        "overall": "regressed",
        "suite kern": "regressed",
        "suite privacy": "unchanged",
        "split dev": "regressed",
        "split test": "unchanged",
    }
    # test cases count in the groups, and are never named
    named = {change.case_id for change in comparison.regressions}
    assert len(named) == 11 and not any("test" in case_id for case_id in named)


def test_groups_with_the_same_pairs_are_one_hypothesis() -> None:
    # one suite, dev only: overall, kern and split dev are the same test, not three
    comparison = compare_rates(*_pair_runs(_flips(6, "kern")))
    assert [group.p_holm for group in comparison.groups().values()] == [pytest.approx(2 / 64)] * 3
    assert {group.verdict for group in comparison.groups().values()} == {"regressed"}


def test_alpha_moves_the_verdict() -> None:
    cases = _flips(8, "kern")
    assert compare_rates(*_pair_runs(cases), alpha=0.01).overall.verdict == "regressed"
    assert compare_rates(*_pair_runs(cases), alpha=0.005).overall.verdict == "unchanged"
    improved = compare_rates(*_pair_runs(_flips(8, "kern", before=F, now=P)))
    assert improved.overall.verdict == "improved" and not improved.regressed


def test_fractional_rates_pair_by_difference() -> None:
    now = _run("now", {"a": _case([P, P, F]), "b": _case([F, P, F])}, k=3)
    before = _run("before", {"a": _case([P, P, P]), "b": _case([P, F, F])}, k=3)
    overall = compare_rates(now, before).overall
    assert (overall.improved, overall.regressed, overall.unchanged) == (0, 1, 1)
    assert overall.delta == pytest.approx(-1 / 6)
    assert overall.stderr == pytest.approx(1 / 6)  # sd of (−1/3, 0) / sqrt 2


def test_too_many_attempts_that_did_not_run_make_every_verdict_inconclusive() -> None:
    cases = _flips(8, "kern")
    now, before = _pair_runs(cases)
    # 1 of 10 planned attempts did not run: 10 % > 5 %
    broken = _run(
        "now",
        {case_id: pair[0] for case_id, pair in cases.items()},
        planned=10,
        codes={"connect_error": 1},
    )
    comparison = compare_rates(broken, before)
    assert comparison.inconclusive and not comparison.regressed
    assert {group.verdict for group in comparison.groups().values()} == {"inconclusive"}
    assert comparison.overall.p_value == pytest.approx(2 / 256)  # still computed
    assert comparison.unrun.run.codes == {"connect_error": 1}
    assert comparison.unrun.baseline.attempts == 0
    why = comparison.why_inconclusive()
    assert why is not None and "run now: 1 attempt did not run (connect_error 1)" in why
    # exactly the share allowed is not more than it
    assert not compare_rates(broken, before, max_unrun=0.1).inconclusive
    # the baseline's attempts count too
    assert compare_rates(before, broken).inconclusive
    assert compare_rates(now, before).why_inconclusive() is None


def test_runs_of_another_project_do_not_compare() -> None:
    with pytest.raises(ProjectError, match="belongs to project 'q'"):
        compare_rates(_run("b", {}), _run("a", {}, project="q"))


def test_no_pairs_give_empty_groups() -> None:
    comparison = compare_rates(_run("b", {}), _run("a", {}))
    overall = comparison.overall
    assert (overall.pairs, overall.delta, overall.p_value, overall.p_holm) == (0, None, 1.0, 1.0)
    assert comparison.suites == {} and comparison.splits == {}


def test_a_case_places_its_attempts_that_did_not_run() -> None:
    # attempts 0 and 2 did not run: P _ F _ read as passes (P, F) with places (1, 3)
    case = CaseAttempts("kern", "dev", "d", (P, F), 2, 0.0, (0, 2))
    assert case.outcomes() == (None, P, None, F)
    assert case.bound(4, unrun_passed=False) == 0.25
    assert case.bound(4, unrun_passed=True) == 0.75
    assert case.bound(2, unrun_passed=False) == 0.5  # the first two: _ P
    # without places, the attempts that did not run are the last ones
    assert _case([P, F], unrun=1).outcomes() == (P, F, None)
    with pytest.raises(ValueError, match="does not place"):
        CaseAttempts("kern", "dev", "d", (P,), 1, 0.0, (1, 2))


def _hidden(failing: int, passing: int, *, k: int = 1) -> tuple[RunAttempts, RunAttempts]:
    """A baseline whose cases all pass, and a run whose first `failing` cases did not run
    (a 5xx) and whose other `passing` cases pass: 1 attempt per case unless `k` says."""
    now = {f"c{i:03d}": _case([], unrun=k) for i in range(failing)}
    now |= {f"c{i:03d}": _case([P] * k) for i in range(failing, failing + passing)}
    before = {case_id: _case([P] * k) for case_id in now}
    codes = {"http_500": failing * k}
    return _run("now", now, k=k, codes=codes), _run("before", before, k=k)


def test_every_attempt_ran_and_there_is_no_bound() -> None:
    comparison = compare_rates(*_pair_runs(_flips(8, "kern")))
    for group in comparison.groups().values():
        assert (group.worst_case_delta, group.worst_case_p_holm, group.reason) == (None, None, None)


def test_attempts_that_did_not_run_could_hide_a_regression() -> None:
    # 6 of 130 attempts (4.6 %, not too many) answered 500 where the baseline passed. Like
    # with like leaves those cases out and sees no change; the bound counts them failed:
    # 6 regressed pairs and no improved one, p = 2/64, a significant regression.
    now, before = _hidden(6, 124)
    comparison = compare_rates(now, before)
    assert not comparison.inconclusive and comparison.unrun_cases == 6
    overall = comparison.overall
    assert (overall.pairs, overall.delta, overall.p_holm) == (124, 0.0, 1.0)
    assert overall.worst_case_delta == pytest.approx(-6 / 130)
    assert overall.worst_case_p_holm == pytest.approx(2 / 64)
    for group in comparison.groups().values():
        assert (group.verdict, group.reason) == ("inconclusive", "unrun_could_hide_regression")
    assert not comparison.regressed and comparison.gate == "undecided"
    assert list(comparison.could_hide_regression()) == ["overall", "suite kern", "split dev"]
    why = comparison.why_undecided()
    assert why is not None
    assert "could hide a regression in overall, suite kern, split dev" in why
    assert "counted as failed in run now (6 attempts did not run (http_500 6))" in why
    assert "overall changes by -4.6 pt (adjusted p 0.0312)" in why
    assert "run the suites again and compare again" in why and "--resume" not in why
    # five such attempts cannot make a significant drop (2/32 > 0.05): the gate passes
    assert compare_rates(*_hidden(5, 125)).gate == "passed"


def test_the_bound_counts_the_baselines_attempts_that_did_not_run_as_passed() -> None:
    # the baseline's attempts of 6 cases did not run and the run failed them: like with
    # like has nothing to pair, the bound 6 regressions
    before = {f"c{i}": _case([], unrun=1) if i < 6 else _case([P]) for i in range(130)}
    now = {f"c{i}": _case([F]) if i < 6 else _case([P]) for i in range(130)}
    baseline = _run("before", before, codes={"interrupted": 6})
    comparison = compare_rates(_run("now", now), baseline)
    assert comparison.overall.reason == "unrun_could_hide_regression"
    # the other way round the unknown attempts are the run's, the failed ones the baseline's:
    # at worst unchanged
    assert compare_rates(_run("now", before, codes={"interrupted": 6}), _run("b", now)).gate == (
        "passed"
    )


def test_an_interrupted_run_is_told_to_resume() -> None:
    now, before = _hidden(6, 124)
    stopped = _run("now", now.cases, codes={"interrupted": 6})
    why = compare_rates(stopped, before).why_undecided()
    assert why is not None and "resume run now (soev-evals run --resume now)" in why
    why = compare_rates(now, before).why_undecided()
    assert why is not None and "--resume" not in why


def test_a_regression_found_like_with_like_stays_a_regression() -> None:
    # 8 cases fail in both senses, 6 more did not run: the comparison itself regressed
    cases = {**_flips(8, "kern")}
    now = {case_id: pair[0] for case_id, pair in cases.items()}
    before = {case_id: pair[1] for case_id, pair in cases.items()}
    now |= {f"u{i}": _case([], unrun=1) for i in range(6)}
    before |= {f"u{i}": _case([P]) for i in range(6)}
    comparison = compare_rates(
        _run("now", now, planned=200, codes={"http_502": 6}), _run("before", before)
    )
    assert comparison.overall.verdict == "regressed" and comparison.overall.reason is None
    assert comparison.overall.worst_case_delta == pytest.approx(-14 / 14)
    assert comparison.gate == "failed"


def test_attempts_that_did_not_run_where_the_baseline_failed_hide_nothing() -> None:
    now = {f"c{i}": _case([], unrun=1) if i < 6 else _case([P]) for i in range(130)}
    before = {f"c{i}": _case([F]) if i < 6 else _case([P]) for i in range(130)}
    comparison = compare_rates(_run("now", now, codes={"http_500": 6}), _run("before", before))
    overall = comparison.overall
    assert (overall.worst_case_delta, overall.worst_case_p_holm) == (0.0, 1.0)
    assert (overall.verdict, overall.reason) == ("unchanged", None)
    assert comparison.gate == "passed" and comparison.why_undecided() is None


def test_the_bound_with_different_k_takes_the_first_attempts_of_each() -> None:
    # now at k = 3: attempt 0 did not run, attempts 1 and 2 passed; the baseline at k = 1
    # passed. Like with like: 1 against 1. The bound: the first attempt of each, the run's
    # failed: 0 against 1.
    now = {f"c{i}": CaseAttempts("kern", "dev", "d", (P, P), 1, 0.0, (0,)) for i in range(6)}
    now |= {f"d{i}": _case([P, P, P]) for i in range(120)}
    before = {case_id: _case([P]) for case_id in now}
    comparison = compare_rates(_run("now", now, k=3, codes={"http_503": 6}), _run("before", before))
    overall = comparison.overall
    assert (overall.pairs, overall.unchanged, overall.delta) == (126, 126, 0.0)
    assert overall.worst_case_delta == pytest.approx(-6 / 126)
    assert overall.reason == "unrun_could_hide_regression"


def test_too_many_attempts_that_did_not_run_give_their_reason() -> None:
    now, before = _hidden(7, 123)
    comparison = compare_rates(now, before)  # 7 of 130 is more than 5 %
    assert comparison.inconclusive and comparison.gate == "undecided"
    assert {group.reason for group in comparison.groups().values()} == {"too_many_unrun"}
    assert comparison.overall.worst_case_p_holm == pytest.approx(2 / 128)
    assert comparison.why_undecided() == comparison.why_inconclusive()
