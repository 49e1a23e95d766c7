"""Simulation of the comparison gate and of `plan` (docs/statistics.md#the-simulation).

The statistics of `compare` and `plan` are claims; this checks them on simulated projects,
through the product's own functions (`run.compare.compare_rates`, `run.plan.plan`,
`core.stats`). A simulated project draws each case's pass probability π_i from a Beta
distribution; a run of it passes each attempt of case i with probability π_i.

1. False alarms. Two runs of the same assistant (the same π_i), with k = 1 or 3 in each,
   are compared by `compare_rates` over a project of 3 suites and both splits (one Holm
   family of 6 groups). The gate (`--fail-on-regression`) fails when any group regressed:
   how often, and how often it says inconclusive. Two more rows: 2 % of the attempts did
   not run (each attempt on its own), and an outage, where 15 % of the new run's attempts
   did not run.
2. Power at the detectable drop. On a pilot (k = 3: one run; k = 1: two runs, the second
   compared with the first), `plan` states the drop its n cases detect. The assistant then
   drops by exactly that much (every π_i scaled), a new run is compared with the pilot's
   last run, and the group (alone, no Holm) must be found `regressed`: how often.
3. Power with the cases needed. On the same pilot, `plan` states how many cases detect a
   drop of 10 points at the same k. Fresh projects of that many cases (new π_i from the
   same Beta) are run twice, the second after the drop: how often the group regressed.

The promise: every false-alarm rate at most α = 0.05 (within Monte-Carlo error), and the
power in 2 and 3 at 80 ± 7 %, averaged over the simulated projects.

    python bench/power.py                 # the table of docs/statistics.md (a few minutes)
    python bench/power.py --quick         # fewer projects, to try it out
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from soev_pipeline.core.stats import ALPHA, sign_test, verdict
from soev_pipeline.run.compare import CaseAttempts, RunAttempts, compare_rates
from soev_pipeline.run.plan import plan
from soev_pipeline.run.unrun import tally

BETAS = {"Beta(0.6, 0.6)": (0.6, 0.6), "Beta(4, 1)": (4.0, 1.0)}
SIZES = (30, 100)
DROP = 0.10
SUITES = ("a", "b", "c")


@dataclass(frozen=True)
class Setting:
    """One row of a table: what is simulated, and how many times."""

    part: str
    beta: str
    n: int
    k: int
    k_baseline: int = 0
    unrun_now: float = 0.0
    unrun_baseline: float = 0.0
    label: str = ""


def _run(
    rng: np.random.Generator, pi: np.ndarray, k: int, unrun: float, run_id: str, project: str
) -> RunAttempts:
    """A run of the project: each case's attempts, those that did not run left out."""
    passed = rng.random((len(pi), k)) < pi[:, None]
    ran = rng.random((len(pi), k)) >= unrun
    cases: dict[str, CaseAttempts] = {}
    codes: dict[tuple[str, int], str] = {}
    for i in range(len(pi)):
        case_id = f"c{i:04d}"
        suite = SUITES[i % len(SUITES)] if project == "gate" else "s"
        split = "test" if project == "gate" and i % 3 == 2 else "dev"
        passes = tuple(bool(p) for p, r in zip(passed[i], ran[i], strict=True) if r)
        for attempt in np.flatnonzero(~ran[i]):
            codes[(case_id, int(attempt))] = "connect_error"
        cases[case_id] = CaseAttempts(suite, split, "d", passes, k - len(passes))  # type: ignore[arg-type]
    suites = SUITES if project == "gate" else ("s",)
    return RunAttempts(run_id, project, suites, k, cases, len(pi) * k, tally(codes))


@cache
def _p(improved: int, regressed: int) -> float:
    return sign_test(improved, regressed)


def _regressed(
    rng: np.random.Generator, pi: np.ndarray, k: int, base: np.ndarray, factor: float, reps: int
) -> float:
    """The share of `reps` new runs (π scaled by `factor`) whose group `verdict` against the
    baseline's rates `base` is `regressed`: one group, no Holm, as `detectable_drop` says."""
    now = rng.binomial(k, np.clip(factor * pi, 0, 1), size=(reps, len(pi))) / k
    difference = now - base[None, :]
    improved = (difference > 0).sum(axis=1)
    regressed = (difference < 0).sum(axis=1)
    delta = difference.mean(axis=1)
    return float(
        np.mean(
            [
                verdict(float(d), _p(int(i), int(r))) == "regressed"
                for i, r, d in zip(improved, regressed, delta, strict=True)
            ]
        )
    )


def _pilot(rng: np.random.Generator, pi: np.ndarray, k: int) -> tuple[Any, np.ndarray]:
    """The plan of a pilot of the project, and its last run's case rates."""
    last = _run(rng, pi, k, 0.0, "pilot", "plan")
    comparison = None
    if k == 1:
        first = _run(rng, pi, k, 0.0, "before", "plan")
        comparison = compare_rates(last, first)
    (group, _) = plan(last, ["s"], k=k, drop=DROP, comparison=comparison)
    rates = np.array([sum(case.passes) / k for case in last.cases.values()])
    return group, rates


def simulate(setting: Setting, seed: int, count: int, reps: int) -> dict[str, float]:
    """`count` projects of one setting; returns the sums that make its row."""
    rng = np.random.default_rng(seed)
    a, b = BETAS[setting.beta]
    sums = {"projects": 0.0, "alarms": 0.0, "inconclusive": 0.0, "power": 0.0, "answered": 0.0}
    sums.update({"stated": 0.0, "stated_sq": 0.0})
    for _ in range(count):
        sums["projects"] += 1
        pi = rng.beta(a, b, setting.n)
        if setting.part == "gate":
            now = _run(rng, pi, setting.k, setting.unrun_now, "now", "gate")
            before = _run(rng, pi, setting.k_baseline, setting.unrun_baseline, "before", "gate")
            comparison = compare_rates(now, before)
            sums["alarms"] += comparison.regressed
            sums["inconclusive"] += comparison.inconclusive
            continue
        group, base = _pilot(rng, pi, setting.k)
        if setting.part == "drop":
            drop = group.detectable_drop
            if drop is None:
                continue
            sums["answered"] += 1
            sums["stated"] += drop
            sums["stated_sq"] += drop * drop
            factor = max(0.0, 1 - drop / float(pi.mean()))
            sums["power"] += _regressed(rng, pi, setting.k, base, factor, reps)
            continue
        needed = group.cases_needed
        if needed is None:
            continue
        sums["answered"] += 1
        sums["stated"] += needed
        sums["stated_sq"] += needed * needed
        hits = 0.0
        for _ in range(reps):
            fresh = rng.beta(a, b, needed)
            base_fresh = rng.binomial(setting.k, fresh) / setting.k
            factor = max(0.0, 1 - DROP / float(fresh.mean()))
            hits += _regressed(rng, fresh, setting.k, base_fresh, factor, 1)
        sums["power"] += hits / reps
    return sums


def settings() -> Iterator[Setting]:
    for beta in BETAS:
        for n in SIZES:
            for k, k_baseline in ((1, 1), (3, 3), (3, 1), (1, 3)):
                yield Setting("gate", beta, n, k, k_baseline, label=f"k {k_baseline} → {k}")
            yield Setting("gate", beta, n, 3, 3, 0.02, 0.02, "k 3 → 3, 2 % did not run")
            yield Setting("gate", beta, n, 3, 3, 0.15, 0.0, "k 3 → 3, outage: 15 % did not run")
    for part in ("drop", "cases"):
        for beta in BETAS:
            for n in SIZES:
                for k in (1, 3):
                    yield Setting(part, beta, n, k, label=f"k {k}")


def _wilson_high(hits: float, n: float) -> float:
    if n == 0:
        return float("nan")
    p, z = hits / n, 1.96
    c = 1 + z * z / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / c


def _task(args: tuple[Setting, int, int, int]) -> tuple[Setting, dict[str, float]]:
    setting, seed, count, reps = args
    return setting, simulate(setting, seed, count, reps)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--gate-runs", type=int, default=2000, help="comparisons per gate row")
    options.add_argument("--projects", type=int, default=400, help="pilots per power row")
    options.add_argument("--reps", type=int, default=100, help="new runs per pilot")
    options.add_argument("--workers", type=int, default=2)
    options.add_argument("--seed", type=int, default=20261201)
    options.add_argument("--quick", action="store_true", help="a tenth of the work")
    args = options.parse_args()
    scale = 10 if args.quick else 1
    chunks = 8
    tasks = []
    seeds = np.random.SeedSequence(args.seed)
    for setting in settings():
        total = (args.gate_runs if setting.part == "gate" else args.projects) // scale
        reps = max(1, args.reps // scale) if setting.part != "gate" else 0
        for index, child in enumerate(seeds.spawn(chunks)):
            count = total // chunks + (index < total % chunks)
            tasks.append((setting, int(child.generate_state(1)[0]), count, reps))
    began = time.perf_counter()
    rows: dict[Setting, dict[str, float]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for setting, sums in pool.map(_task, tasks):
            row = rows.setdefault(setting, dict.fromkeys(sums, 0.0))
            for key, value in sums.items():
                row[key] += value
    print(f"simulated in {time.perf_counter() - began:.0f} s ({args.workers} processes)\n")
    print("False alarms of the gate: two runs of one assistant, 3 suites, dev and test")
    print(f"(α = {ALPHA}; upper = the 95 % Wilson bound of the rate)\n")
    print(
        "| cases from | n | runs | comparisons | gate fails (exit 3) | upper "
        "| inconclusive (exit 4) |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for setting, row in rows.items():
        if setting.part != "gate":
            continue
        runs = row["projects"]
        print(
            f"| {setting.beta} | {setting.n} | {setting.label} | {runs:.0f} "
            f"| {100 * row['alarms'] / runs:.2f} % "
            f"| {100 * _wilson_high(row['alarms'], runs):.2f} % "
            f"| {100 * row['inconclusive'] / runs:.1f} % |"
        )
    for part, title, stated in (
        (
            "drop",
            "Power at the drop `plan` says n cases detect (one group, no Holm)",
            "drop stated",
        ),
        (
            "cases",
            f"Power with the cases `plan` says detect a {100 * DROP:.0f}-point drop",
            "cases stated",
        ),
    ):
        print(f"\n{title}\n")
        print(f"| cases from | pilot n | k | pilots answered | {stated}: mean (sd) | power |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for setting, row in rows.items():
            if setting.part != part:
                continue
            answered = row["answered"]
            if not answered:
                print(f"| {setting.beta} | {setting.n} | {setting.k} | 0 | — | — |")
                continue
            mean = row["stated"] / answered
            sd = math.sqrt(max(0.0, row["stated_sq"] / answered - mean * mean))
            shown = (
                f"{100 * mean:.1f} pt ({100 * sd:.1f})"
                if part == "drop"
                else f"{mean:.0f} ({sd:.0f})"
            )
            print(
                f"| {setting.beta} | {setting.n} | {setting.k} "
                f"| {answered:.0f} of {row['projects']:.0f} | {shown} "
                f"| {100 * row['power'] / answered:.1f} % |"
            )


if __name__ == "__main__":
    main()
