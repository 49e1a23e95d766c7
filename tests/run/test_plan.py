"""`soev-evals plan`: the power of each suite from the case rates of a run."""

from __future__ import annotations

import pytest

from soev_pipeline.run.compare import CaseRate, RunRates
from soev_pipeline.run.plan import plan


def _rates(rates: dict[str, tuple[str, float]]) -> RunRates:
    cases = {case_id: CaseRate(suite, "dev", "d", rate) for case_id, (suite, rate) in rates.items()}
    return RunRates("r1", "p", ("kern", "scope"), cases)


def test_a_plan_per_suite_and_overall() -> None:
    rates = _rates(
        {
            "a": ("kern", 1.0),
            "b": ("kern", 0.0),
            "c": ("kern", 1.0),
            "d": ("kern", 0.0),
            "e": ("scope", 1.0),
        }
    )
    kern, scope, overall = plan(rates, ["kern", "scope"], run_k=1, k=1, drop=0.1)
    # variance 1/3: detects 2.8016 · sqrt(2 · (1/3) / 4) = 1.1437; needs ⌈2 · 7.849 · (1/3) / 0.01⌉
    assert (kern.name, kern.cases, kern.pass_rate) == ("kern", 4, 0.5)
    assert kern.case_sd == pytest.approx((1 / 3) ** 0.5)
    assert kern.detectable_drop == pytest.approx(1.14373, abs=1e-4)
    assert kern.cases_needed == 524 and not kern.variance_floor
    assert scope.cases == 1 and scope.cases_needed is None and scope.detectable_drop is None
    assert overall.name == "overall" and overall.cases == 5


def test_more_attempts_need_fewer_cases_when_the_noise_is_in_the_attempts() -> None:
    rates = _rates({f"c{i}": ("kern", rate) for i, rate in enumerate([2 / 3, 1 / 3] * 5)})
    at_three = plan(rates, ["kern"], run_k=3, k=3)[0]
    at_ten = plan(rates, ["kern"], run_k=3, k=10)[0]
    assert at_ten.cases_needed is not None and at_three.cases_needed is not None
    assert at_ten.cases_needed < at_three.cases_needed


def test_cases_that_never_vary_use_the_floor() -> None:
    rates = _rates({f"c{i}": ("kern", 1.0) for i in range(20)})
    kern = plan(rates, ["kern"], run_k=1, k=1, drop=0.1)[0]
    assert kern.detectable_drop == 0.0
    assert kern.variance_floor and kern.cases_needed == 71  # ⌈2 · 7.849 · 0.045 / 0.01⌉


def test_a_drop_outside_zero_and_one_is_refused() -> None:
    with pytest.raises(ValueError, match="drop"):
        plan(_rates({}), [], run_k=1, k=1, drop=1.0)
