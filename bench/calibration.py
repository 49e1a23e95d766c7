"""Simulations of the judge's figures, and the time a calibration takes.

Two intervals of docs/statistics.md are claims, checked here through the product's own
functions on simulated label sets and runs:

1. κ's interval (docs/statistics.md#kappas-interval, `calibration.kappa`). People pass a
   share π of n labelled items; the judge passes an item people pass with probability r,
   and fails one they fail with probability s; the true κ follows from the four cells. How
   often does the interval hold the true κ, at n = 5, 10, 20, 40 and 100? Beside it, the
   large-sample interval κ ± 1.96 · sqrt(p_o (1 − p_o) / (n (1 − p_e)²)), which the product
   no longer uses. Label sets whose κ is undefined (p_e = 1) are left out.
2. The corrected rate and its interval (docs/statistics.md#the-corrected-rate,
   `calibration.correct`). A project draws each case's true pass probability p_i from a
   Beta distribution; the true rate is its mean. A run attempts each of n cases k times; a
   person would pass an attempt with probability p_i, and the judge passes it with
   probability r when the person would, 1 − s when not. A label set of L items (60 %
   passed by people) measures r and s. How often is there a corrected rate (the judge
   shown better than chance), and how often does its interval hold the true rate? Beside
   it, the delta method's interval (Rogan and Gladen's variance, q clustered the same way).
   Then a judge no better than a coin: how often it gets a corrected rate, and one clipped
   to 0 or 1, with the rule on Youden's J and without it.
3. Monte-Carlo error. The corrected interval's bounds come from 20 000 seeded bootstrap
   draws; how much they move between seeds.
4. Time. `soev-evals calibrate --run RUN` on the demo project (44 labels), the first time
   (the judge is asked) and the second (its cache answers).

    python bench/calibration.py              # every table of docs/statistics.md (minutes)
    python bench/calibration.py --kappa      # κ's coverage table alone (seconds)
    python bench/calibration.py --quick      # fewer simulated label sets and projects
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from soev_pipeline.calibration import (
    correct,
    corrected_interval,
    judged_rate,
    kappa,
    rogan_gladen,
)
from soev_pipeline.calibration.corrected import JudgedRate
from soev_pipeline.core.stats import Z95, wilson

ROOT = Path(__file__).resolve().parents[1]
BETAS = {"Beta(0.6, 0.6)": (0.6, 0.6), "Beta(4, 1)": (4.0, 1.0)}
JUDGES = {"good (r .95, s .90)": (0.95, 0.90), "lenient (r 1, s .30)": (1.0, 0.30)}
JUDGES["weak (r .80, s .60)"] = (0.80, 0.60)
LABELS = (40, 200)
CASES = (30, 100)
KS = (1, 3)
HUMAN_PASS = 0.6
KAPPA_ITEMS = (5, 10, 20, 40, 100)
KAPPA_PREVALENCES = (0.5, 0.8)
KAPPA_JUDGES = {
    "perfect (r 1, s 1)": (1.0, 1.0),
    "near-perfect (r .95, s .95)": (0.95, 0.95),
    "good (r .90, s .80)": (0.90, 0.80),
    "weak (r .80, s .60)": (0.80, 0.60),
    "lenient (r 1, s .30)": (1.0, 0.30),
    "coin (r .50, s .50)": (0.50, 0.50),
}


def true_kappa(prevalence: float, r: float, s: float) -> float:
    """κ of the population: the judge against people on every item there is."""
    judge_pass = prevalence * r + (1 - prevalence) * (1 - s)
    chance = prevalence * judge_pass + (1 - prevalence) * (1 - judge_pass)
    observed = prevalence * r + (1 - prevalence) * s
    return (observed - chance) / (1 - chance)


def large_sample(a: int, b: int, c: int, d: int) -> tuple[float, float] | None:
    """The large-sample interval κ ± 1.96 · sqrt(p_o (1 − p_o) / (n (1 − p_e)²))."""
    n = a + b + c + d
    observed, first, second = (a + d) / n, (a + b) / n, (a + c) / n
    chance = first * second + (1 - first) * (1 - second)
    if chance >= 1:
        return None
    value = (observed - chance) / (1 - chance)
    half = Z95 * math.sqrt(observed * (1 - observed) / (n * (1 - chance) ** 2))
    return (max(-1.0, value - half), min(1.0, value + half))


def wilson_carried(a: int, b: int, c: int, d: int) -> tuple[float, float] | None:
    """Wilson's interval of p_o carried to κ as the product carries its mid-P interval."""
    n = a + b + c + d
    first, second = (a + b) / n, (a + c) / n
    chance = first * second + (1 - first) * (1 - second)
    if chance >= 1:
        return None
    low, high = wilson((a + d) / n, n)
    return (max(-1.0, (low - chance) / (1 - chance)), min(1.0, (high - chance) / (1 - chance)))


def kappa_coverage(
    prevalence: float, judge: tuple[float, float], n: int, sets: int
) -> tuple[float, float, float, float]:
    """The coverage of κ's interval and its mean width; the coverage of the large-sample
    interval, and of Wilson's interval of p_o carried to κ."""
    r, s = judge
    cells = [prevalence * r, prevalence * (1 - r), (1 - prevalence) * (1 - s)]
    cells.append((1 - prevalence) * s)
    truth = true_kappa(prevalence, r, s)
    rng = np.random.default_rng([n, round(100 * prevalence), round(100 * r), round(100 * s)])
    held = held_large = held_wilson = counted = 0
    width = 0.0
    for a, b, c, d in rng.multinomial(n, cells, size=sets).tolist():
        _, interval = kappa(a, b, c, d)
        if interval is None:
            continue
        counted += 1
        held += interval[0] - 1e-12 <= truth <= interval[1] + 1e-12
        width += interval[1] - interval[0]
        for other, count in ((large_sample(a, b, c, d), 0), (wilson_carried(a, b, c, d), 1)):
            inside = other is not None and other[0] - 1e-12 <= truth <= other[1] + 1e-12
            if count == 0:
                held_large += inside
            else:
                held_wilson += inside
    return held / counted, width / counted, held_large / counted, held_wilson / counted


def kappa_table(sets: int) -> float:
    """Print κ's coverage table; return its lowest coverage."""
    print(f"coverage of κ's 95 % interval ({sets} label sets per cell): the product's interval")
    print("(in brackets: the large-sample interval; Wilson's interval of p_o carried to κ),")
    print("then its mean width\n")
    columns = "".join(f"{f'n = {n}':>22}" for n in KAPPA_ITEMS)
    print(f"{'people pass':>11}  {'judge':<28}{'true κ':>7}{columns}")
    worst = 1.0
    widths: dict[tuple[float, str], list[float]] = {}
    for prevalence, (name, judge) in itertools.product(KAPPA_PREVALENCES, KAPPA_JUDGES.items()):
        cells = []
        for n in KAPPA_ITEMS:
            held, width, held_large, held_wilson = kappa_coverage(prevalence, judge, n, sets)
            worst = min(worst, held)
            widths.setdefault((prevalence, name), []).append(width)
            cells.append(f"{100 * held:5.1f} ({100 * held_large:4.1f}, {100 * held_wilson:4.1f})")
        truth = true_kappa(prevalence, *judge)
        print(f"{prevalence:>11.1f}  {name:<28}{truth:>7.2f}" + "".join(f"{c:>22}" for c in cells))
    print(f"\nmean width of κ's interval\n\n{'people pass':>11}  {'judge':<28}{'':>7}{columns}")
    for (prevalence, name), row in widths.items():
        shown = "".join(f"{width:>22.2f}" for width in row)
        print(f"{prevalence:>11.1f}  {name:<28}{'':>7}{shown}")
    error = 100 * math.sqrt(0.95 * 0.05 / sets)
    print(f"\nlowest coverage: {100 * worst:.1f} % (Monte-Carlo error of a cell ±{error:.1f})")
    return worst


def delta_interval(
    rate: JudgedRate, hits_r: int, n_r: int, hits_s: int, n_s: int
) -> tuple[float, float] | None:
    """Rogan and Gladen's interval: θ ± 1.96 · sqrt(Var q + θ² Var r + (1 − θ)² Var s) / J."""
    q = rate.passed / rate.verdicts
    r, s = hits_r / n_r, hits_s / n_s
    theta = rogan_gladen(q, r, s)
    if theta is None:
        return None
    youden = r + s - 1
    variance = q * (1 - q) / rate.effective
    variance += theta**2 * r * (1 - r) / n_r + (1 - theta) ** 2 * s * (1 - s) / n_s
    half = Z95 * math.sqrt(variance) / youden
    return (max(0.0, theta - half), min(1.0, theta + half))


def coverage(
    beta: tuple[float, float], judge: tuple[float, float], labels: int, n: int, k: int, sims: int
) -> tuple[float, float, float, float]:
    """The share of projects with a corrected rate and, over those, the coverage of its
    interval, its mean width, and the delta method's coverage."""
    rng = np.random.default_rng([int(beta[0] * 10), int(judge[1] * 100), labels, n, k])
    truth = beta[0] / sum(beta)
    r, s = judge
    held = held_delta = counted = 0
    width = 0.0
    for _ in range(sims):
        p = rng.beta(*beta, n)
        passes = rng.binomial(k, p * r + (1 - p) * (1 - s))
        rate = judged_rate([(int(x), k) for x in passes])
        human_pass = int(rng.binomial(labels, HUMAN_PASS))
        human_fail = labels - human_pass
        hits_r = int(rng.binomial(human_pass, r))
        hits_s = int(rng.binomial(human_fail, s))
        found = correct(rate, hits_r, human_pass, hits_s, human_fail).interval
        if found is None:
            continue
        counted += 1
        held += found[0] <= truth <= found[1]
        width += found[1] - found[0]
        delta = delta_interval(rate, hits_r, human_pass, hits_s, human_fail)
        held_delta += delta is not None and delta[0] <= truth <= delta[1]
    if counted == 0:
        return 0.0, math.nan, math.nan, math.nan
    return counted / sims, held / counted, width / counted, held_delta / counted


def corrected_table(sims: int) -> None:
    """Print the coverage table of the corrected rate's interval."""
    print(f"coverage of the 95 % interval of the corrected rate ({sims} projects per row)\n")
    print(
        f"{'cases':>14} {'judge':<22} {'labels':>6} {'n':>4} {'k':>2} {'rated':>6} "
        f"{'coverage':>9} {'width':>6} {'delta method':>13}"
    )
    worst = 1.0
    for (name, beta), (judge_name, judge), labels, n, k in itertools.product(
        BETAS.items(), JUDGES.items(), LABELS, CASES, KS
    ):
        rated, held, width, held_delta = coverage(beta, judge, labels, n, k, sims)
        if rated:
            worst = min(worst, held)
        print(
            f"{name:>14} {judge_name:<22} {labels:>6} {n:>4} {k:>2} {100 * rated:>5.1f}% "
            f"{100 * held:>8.1f}% {width:>6.3f} {100 * held_delta:>12.1f}%"
        )
    error = 100 * math.sqrt(0.95 * 0.05 / sims)
    print(f"\nlowest coverage: {100 * worst:.1f} % (Monte-Carlo error of a full row ±{error:.1f})")


def coin_judge(sims: int) -> None:
    """How often a judge no better than a coin (r = s = .5) gets a corrected rate, and one
    clipped to 0 or 1: with the rule on Youden's J interval, and with J > 0 alone."""
    print(f"\na judge no better than a coin, r = s = .5 ({sims} label sets per row)\n")
    print(f"{'labels':>6} {'rated':>8} {'clipped':>8} {'rated, J > 0 alone':>19} {'clipped':>8}")
    for labels in LABELS:
        rng = np.random.default_rng([labels, 50])
        rated = clipped = rated_before = clipped_before = 0
        for _ in range(sims):
            rate = judged_rate([(int(x), 1) for x in rng.binomial(1, 0.5, 100)])
            human_pass = int(rng.binomial(labels, HUMAN_PASS))
            hits_r = int(rng.binomial(human_pass, 0.5))
            hits_s = int(rng.binomial(labels - human_pass, 0.5))
            found = correct(rate, hits_r, human_pass, hits_s, labels - human_pass)
            rated += found.value is not None
            clipped += found.clipped
            r, s = hits_r / human_pass, hits_s / (labels - human_pass)
            if r + s - 1 > 0:
                rated_before += 1
                raw = (rate.passed / rate.verdicts + s - 1) / (r + s - 1)
                clipped_before += not 0 <= raw <= 1
        print(
            f"{labels:>6} {100 * rated / sims:>7.1f}% {100 * clipped / sims:>7.1f}% "
            f"{100 * rated_before / sims:>18.1f}% {100 * clipped_before / sims:>7.1f}%"
        )


def monte_carlo_error(seeds: int = 40) -> tuple[float, float]:
    """The standard deviation of the lower and upper bounds over bootstrap seeds, for a
    demo-sized case (40 labels, a run of 60 verdicts)."""
    rate = judged_rate([(1, 1)] * 45 + [(0, 1)] * 15)
    bounds = [
        corrected_interval(rate, 20, 24, 11, 16, draws=20_000 + seed) for seed in range(seeds)
    ]
    lows = [b[0] for b in bounds if b is not None]
    highs = [b[1] for b in bounds if b is not None]
    return statistics.stdev(lows), statistics.stdev(highs)


def calibration_time() -> tuple[float, float]:
    """Seconds of `soev-evals calibrate --run RUN` on a copy of the demo: cold, then warm."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from reference import reference_assistant

    soev_evals = Path(sys.executable).with_name("soev-evals")
    with tempfile.TemporaryDirectory() as folder:
        demo = Path(folder) / "demo"
        ignored = shutil.ignore_patterns("runs", ".soev", "report.html")
        shutil.copytree(ROOT / "examples" / "demo", demo, ignore=ignored)
        project = str(demo / "project.yaml")
        with reference_assistant() as url:
            env = {**os.environ, "SOEV_DEMO_URL": url, "DAGSTER_HOME": str(Path(folder) / "dh")}
            run = [str(soev_evals), "run", "--project", project, "--run-id", "r1"]
            subprocess.run(run, env=env, check=True, capture_output=True)
            for cache in (demo / ".soev").glob("judge-cache.sqlite*"):
                cache.unlink()  # the run filled it: calibrate from nothing
            command = [str(soev_evals), "calibrate", "--run", "r1", "--project", project]
            times = []
            for _ in range(2):
                started = time.perf_counter()
                subprocess.run(command, env=env, check=True, capture_output=True)
                times.append(time.perf_counter() - started)
    return times[0], times[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer simulated label sets")
    parser.add_argument("--sims", type=int, help="simulated projects per row")
    parser.add_argument("--kappa", action="store_true", help="only κ's coverage table")
    args = parser.parse_args()
    kappa_table(args.sims or (500 if args.quick else 4000))
    if args.kappa:
        return 0
    sims = args.sims or (200 if args.quick else 1000)
    print()
    corrected_table(sims)
    coin_judge(sims)
    low, high = monte_carlo_error()
    print(f"\nbootstrap bounds between seeds: sd {low:.4f} (lower), {high:.4f} (upper)")
    cold, warm = calibration_time()
    print(
        f"soev-evals calibrate --run on the demo (44 labels): {cold:.1f} s asking the judge, "
        f"{warm:.1f} s from its cache"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
