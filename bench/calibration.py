"""Simulation of the corrected rate's interval, and the time a calibration takes.

The interval of `corrected_pass_rate` (docs/statistics.md#the-corrected-rate) is a claim: a
95 % interval that
carries the uncertainty of the judge's pass rate q over a run and of its recalls r and s
measured on human labels. This checks it through the product's own functions
(`calibration.judged_rate`, `calibration.corrected_interval`) on simulated projects:

1. Coverage. A project draws each case's true pass probability p_i from a Beta
   distribution; the true rate is its mean. A run attempts each of n cases k times; a
   person would pass an attempt with probability p_i, and the judge passes it with
   probability r when the person would, 1 − s when not. A label set of L items (60 %
   passed by people) measures r and s. How often does the interval hold the true rate?
   Beside it, the delta method's interval (Rogan and Gladen's variance, q clustered the
   same way), which the product does not use, for comparison.
2. Monte-Carlo error. The interval's bounds come from 20 000 seeded bootstrap draws; how
   much they move between seeds.
3. Time. `soev-evals calibrate --run RUN` on the demo project (44 labels), the first time
   (the judge is asked) and the second (its cache answers).

    python bench/calibration.py              # the table of docs/statistics.md (minutes)
    python bench/calibration.py --quick      # fewer simulated projects
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

from soev_pipeline.calibration import corrected_interval, judged_rate, rogan_gladen
from soev_pipeline.calibration.corrected import JudgedRate
from soev_pipeline.core.stats import Z95

ROOT = Path(__file__).resolve().parents[1]
BETAS = {"Beta(0.6, 0.6)": (0.6, 0.6), "Beta(4, 1)": (4.0, 1.0)}
JUDGES = {"good (r .95, s .90)": (0.95, 0.90), "lenient (r 1, s .30)": (1.0, 0.30)}
JUDGES["weak (r .80, s .60)"] = (0.80, 0.60)
LABELS = (40, 200)
CASES = (30, 100)
KS = (1, 3)
HUMAN_PASS = 0.6


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
) -> tuple[float, float, float]:
    """The coverage of the product's interval, its mean width, the delta method's coverage."""
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
        found = corrected_interval(rate, hits_r, human_pass, hits_s, human_fail)
        if found is None:
            continue
        counted += 1
        held += found[0] <= truth <= found[1]
        width += found[1] - found[0]
        delta = delta_interval(rate, hits_r, human_pass, hits_s, human_fail)
        held_delta += delta is not None and delta[0] <= truth <= delta[1]
    return held / counted, width / counted, held_delta / counted


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
    parser.add_argument("--quick", action="store_true", help="fewer simulated projects")
    parser.add_argument("--sims", type=int, help="simulated projects per row")
    args = parser.parse_args()
    sims = args.sims or (200 if args.quick else 1000)
    print(f"coverage of the 95 % interval of the corrected rate ({sims} projects per row)\n")
    print(
        f"{'cases':>10} {'judge':<22} {'labels':>6} {'n':>4} {'k':>2} "
        f"{'coverage':>9} {'width':>6} {'delta method':>13}"
    )
    worst = 1.0
    for (name, beta), (judge_name, judge), labels, n, k in itertools.product(
        BETAS.items(), JUDGES.items(), LABELS, CASES, KS
    ):
        held, width, held_delta = coverage(beta, judge, labels, n, k, sims)
        worst = min(worst, held)
        print(
            f"{name:>10} {judge_name:<22} {labels:>6} {n:>4} {k:>2} "
            f"{100 * held:>8.1f}% {width:>6.3f} {100 * held_delta:>12.1f}%"
        )
    error = 100 * math.sqrt(0.95 * 0.05 / sims)
    print(f"\nlowest coverage: {100 * worst:.1f} % (Monte-Carlo error of a row ±{error:.1f})")
    low, high = monte_carlo_error()
    print(f"bootstrap bounds between seeds: sd {low:.4f} (lower), {high:.4f} (upper)")
    cold, warm = calibration_time()
    print(
        f"soev-evals calibrate --run on the demo (44 labels): {cold:.1f} s asking the judge, "
        f"{warm:.1f} s from its cache"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
