"""Comparing two runs (docs/statistics.md#two-runs-paired-differences-and-the-sign-test):
pairing like with like, one Holm family, attempts that did not run, inconclusive comparisons,
dev-only names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.compare import CaseAttempts, RunAttempts, compare_rates
from soev_pipeline.run.results import UnrunTally

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


def test_one_holm_family_over_every_group_with_a_changed_pair() -> None:
    # kern: 6 of 6 cases fail now: sign test 2/64 = 0.03125, as do overall and split dev;
    # privacy has no changed pair (p = 1) and stays out of the family: 3 × 0.03125
    cases = {**_flips(6, "kern"), **_flips(4, "privacy", now=P)}
    comparison = compare_rates(*_pair_runs(cases))
    for group in (comparison.overall, comparison.suites["kern"], comparison.splits["dev"]):
        assert group.p_value == pytest.approx(0.03125)
        assert group.p_holm == pytest.approx(0.09375)
        assert group.verdict == "unchanged"
    privacy = comparison.suites["privacy"]
    assert (privacy.p_value, privacy.p_holm, privacy.verdict) == (1.0, 1.0, "unchanged")
    assert not comparison.regressed
    assert "p_holm" in comparison.overall.model_dump()


def test_eight_flips_regress_every_group_that_holds_them() -> None:
    # p = 2/256 in overall, kern and dev; Holm over those three: 3 · 0.0078125 = 0.0234
    comparison = compare_rates(*_pair_runs({**_flips(8, "kern"), **_flips(3, "privacy", now=P)}))
    assert comparison.suites["kern"].p_holm == pytest.approx(3 * 2 / 256)
    assert {name: group.verdict for name, group in comparison.groups().items()} == {
        "overall": "regressed",
        "suite kern": "regressed",
        "suite privacy": "unchanged",
        "split dev": "regressed",
    }
    assert comparison.regressed


def test_holm_with_unequal_groups_and_the_test_split() -> None:
    # overall and kern: 5 flips, p = 2/32 = 0.0625; split dev: 2 flips, p = 0.5; split
    # test: 3 flips, p = 0.25. Holm over 4: 4·0.0625 = 0.25 (both), then 2·0.25 = 0.5, 0.5.
    comparison = compare_rates(*_pair_runs({**_flips(2, "kern"), **_flips(3, "kern", "test")}))
    holm = {name: group.p_holm for name, group in comparison.groups().items()}
    assert holm == {
        "overall": pytest.approx(0.25),
        "suite kern": pytest.approx(0.25),
        "split dev": pytest.approx(0.5),
        "split test": pytest.approx(0.5),
    }
    assert comparison.splits["test"].p_value == pytest.approx(0.25)
    assert comparison.overall.regressed == 5 and comparison.splits["test"].regressed == 3
    # test cases count in the groups, and are never named
    named = [change.case_id for change in comparison.regressions]
    assert named == ["kern-dev-00", "kern-dev-01"]


def test_alpha_moves_the_verdict() -> None:
    cases = _flips(8, "kern")
    assert compare_rates(*_pair_runs(cases), alpha=0.01).overall.verdict == "unchanged"
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
