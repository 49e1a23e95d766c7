"""Simulation of the gate as applied and of `plan` (docs/statistics.md#the-simulation).

The statistics of `compare --fail-on-regression` and `plan` are claims; this checks them on
simulated projects, through the product's own functions (`run.compare.compare_rates`,
`run.plan.plan`, `core.stats`). A simulated project draws each case's pass probability π_i
from a Beta distribution and spreads its cases over 3 or 12 suites, every fifth case in the
test split; a run passes each attempt of case i with probability π_i. The gate is the
whole family as the product applies it: overall first, then Holm over the other groups.

1. False alarms. Two runs of the same assistant are compared by `compare_rates`: how often
   the gate fails (exit 3), and how often it cannot decide (exit 4). The runs use the same
   k or different k; attempts of the new run do not run at random, on hard cases (the
   chance falls with π_i), or only where the attempt would have failed; attempts of both
   runs do not run at random; an outage leaves 15 % of the new run's attempts unrun.
2. A 5xx that hides a regression. The new run's assistant answers HTTP 5xx instead of a
   correct answer on 4.5 % of the attempts (a real loss: the user gets no answer). How
   often the gate passes, fails (3) and cannot decide (4), before (Holm over every group,
   attempts that did not run left out) and now (with the bound least favourable to the
   run).
3. Power at the stated drop. On a pilot (k = 3: one run; k = 1: two runs, the second
   compared with the first) `plan` states the drop that overall and the first suite
   detect. The assistant then drops by exactly that much, in every case or in the suite's
   alone (π scaled), new runs are compared with the pilot's last run, and the gate must
   fail: how often.
4. Power with the stated number of cases. On the same pilot `plan` states how many cases
   (overall, or the first suite's, the rest as they are) detect a drop of 10 points. Fresh
   projects of that size (new π_i) are run twice, the second after the drop: how often the
   gate fails.

The promise: every false-alarm rate at most α = 0.05 (within Monte-Carlo error), and the
power in 3 and 4 at 80 ± 7 %, averaged over the simulated projects. Power runs without
attempts that did not run, so the gate there is `compare_rates`' own test over the groups'
counts (`gate_fails`, checked against `compare_rates` in tests/bench/test_power.py).

    python bench/power.py                 # the tables of docs/statistics.md (about 15 minutes)
    python bench/power.py --quick         # a tenth of the work
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from soev_pipeline.core.stats import ALPHA, holm, overall_first, sign_test, verdict
from soev_pipeline.run.compare import compare_rates
from soev_pipeline.run.plan import plan
from soev_pipeline.run.results import Comparison
from soev_pipeline.run.run_attempts import CaseAttempts, RunAttempts
from soev_pipeline.run.unrun import tally

BETAS = {
    "Beta(0.6, 0.6)": (0.6, 0.6),
    "Beta(0.5, 0.5)": (0.5, 0.5),
    "Beta(4, 1)": (4.0, 1.0),
}
SIZES = (30, 120)
SUITE_COUNTS = (3, 12)
DROP = 0.10
UNRUN = 0.03
"""The share of the new run's attempts that do not run in the false-alarm rows: below the
5 % that makes a comparison inconclusive, so the bound decides."""
OUTAGE = 0.15
HIDDEN = 0.045
"""The share of attempts the assistant of part 2 answers with a 5xx instead of a pass."""
HIDDEN_SIZE = 500
"""A project large enough for a loss of 4.5 points to be found, in part 2."""
CODE = "http_503"


@dataclass(frozen=True)
class Project:
    """A simulated project: each case's π, suite and split, and the groups of a comparison
    (overall, each suite, each split) as index arrays."""

    pi: np.ndarray
    suites: tuple[str, ...]
    suite_of: tuple[str, ...]
    split_of: tuple[str, ...]
    groups: dict[tuple[str, str], np.ndarray] = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.pi)


def make_project(pi: np.ndarray, counts: Sequence[int]) -> Project:
    """A project of `len(pi)` cases, the first counts[0] in suite `s00`, the next counts[1]
    in `s01`, ...; every fifth case (by index) in the test split."""
    suites = tuple(f"s{index:02d}" for index in range(len(counts)))
    suite_of = tuple(name for name, count in zip(suites, counts, strict=True) for _ in range(count))
    split_of = tuple("test" if i % 5 == 4 else "dev" for i in range(len(pi)))
    index = np.arange(len(pi))
    groups = {("overall", ""): index}
    for name in suites:
        groups[("suite", name)] = index[np.array(suite_of) == name]
    for name in ("dev", "test"):
        groups[("split", name)] = index[np.array(split_of) == name]
    return Project(pi, suites, suite_of, split_of, groups)


def even(n: int, suites: int) -> list[int]:
    """n cases over `suites` suites, as evenly as can be."""
    return [n // suites + (index < n % suites) for index in range(suites)]


def attempts(rng: np.random.Generator, pi: np.ndarray, k: int) -> np.ndarray:
    """Whether each of k attempts of each case would pass: an (n, k) array."""
    return rng.random((len(pi), k)) < pi[:, None]


def unrun_mask(
    rng: np.random.Generator, how: str, passed: np.ndarray, pi: np.ndarray, share: float
) -> np.ndarray:
    """Which attempts did not run, a share `share` of them on average (exactly, for
    `passing`): `random`, on `hard` cases (the chance proportional to 1 − π_i), only where
    the attempt would have `failing`, or `passing` (a 5xx instead of a correct answer)."""
    shape = passed.shape
    if how == "random":
        return rng.random(shape) < share
    if how == "hard":
        weight = np.broadcast_to((1 - pi)[:, None], shape)
        return rng.random(shape) < np.clip(share * weight / max(weight.mean(), 1e-9), 0, 1)
    if how == "failing":
        chance = share / max(1 - passed.mean(), 1e-9)
        return ~passed & (rng.random(shape) < min(1.0, chance))
    if how == "passing":
        mask = np.zeros(shape, dtype=bool)
        candidates = np.flatnonzero(passed)
        count = min(len(candidates), int(share * passed.size))
        mask.flat[rng.choice(candidates, size=count, replace=False)] = True
        return mask
    raise ValueError(f"unknown way for attempts not to run: {how!r}")


def as_run(
    project: Project, passed: np.ndarray, unrun: np.ndarray | None, run_id: str
) -> RunAttempts:
    """The attempts of a simulated run as `compare_rates` reads them."""
    cases: dict[str, CaseAttempts] = {}
    codes: dict[tuple[str, int], str] = {}
    k = passed.shape[1]
    for i in range(project.n):
        case_id = f"c{i:04d}"
        gaps = () if unrun is None else tuple(int(at) for at in np.flatnonzero(unrun[i]))
        ran = tuple(bool(p) for at, p in enumerate(passed[i]) if at not in gaps)
        for at in gaps:
            codes[(case_id, at)] = CODE
        cases[case_id] = CaseAttempts(
            project.suite_of[i],
            project.split_of[i],
            "d",
            ran,
            len(gaps),
            0.0,
            gaps,  # type: ignore[arg-type]
        )
    return RunAttempts(run_id, "sim", project.suites, k, cases, project.n * k, tally(codes))


def old_gate(comparison: Comparison) -> str:
    """The gate before the bound and the overall-first family: Holm over every group with a
    changed pair, attempts that did not run left out."""
    if comparison.inconclusive:
        return "undecided"
    groups = comparison.groups()
    family = holm({name: g.p_value for name, g in groups.items() if g.improved + g.regressed > 0})
    regressed = any(
        verdict(groups[name].delta, p, comparison.alpha) == "regressed"
        for name, p in family.items()
    )
    return "failed" if regressed else "passed"


@cache
def _p(improved: int, regressed: int) -> float:
    return sign_test(improved, regressed)


def gate_fails(
    project: Project, now: np.ndarray, before: np.ndarray, *, old: bool = False
) -> np.ndarray:
    """Whether the gate fails for each of a batch of comparisons whose every attempt ran.

    `now` and `before` are (reps, n) case rates over the same number of attempts. This is
    `compare_rates`' test over the groups' counts, vectorized: the sign test per group, the
    family overall first (groups with the same cases tested once), or with `old`, Holm
    over every group with a changed pair.
    """
    difference = now - before
    keys = list(project.groups)
    improved = np.stack([(difference[:, project.groups[key]] > 0).sum(axis=1) for key in keys])
    regressed = np.stack([(difference[:, project.groups[key]] < 0).sum(axis=1) for key in keys])
    delta = np.stack([difference[:, project.groups[key]].mean(axis=1) for key in keys])
    members = {key: frozenset(project.groups[key].tolist()) for key in keys}
    fails = np.zeros(len(difference), dtype=bool)
    for rep in range(len(difference)):
        if old:
            family = {
                key: _p(int(improved[g, rep]), int(regressed[g, rep]))
                for g, key in enumerate(keys)
                if improved[g, rep] + regressed[g, rep]
            }
            adjusted = holm(family)
        else:
            distinct = {
                members[key]: _p(int(improved[g, rep]), int(regressed[g, rep]))
                for g, key in enumerate(keys)
                if improved[g, rep] + regressed[g, rep]
            }
            by_set = overall_first(distinct, members[("overall", "")])
            adjusted = {key: by_set.get(members[key], 1.0) for key in keys}
        fails[rep] = any(
            verdict(float(delta[g, rep]), adjusted.get(key, 1.0)) == "regressed"
            for g, key in enumerate(keys)
        )
    return fails


@dataclass(frozen=True)
class Setting:
    """One row of a table: what is simulated."""

    part: str
    beta: str
    n: int
    suites: int
    k: int
    k_baseline: int = 0
    unrun: str = ""
    share: float = 0.0
    both: bool = False
    label: str = ""


def settings() -> Iterator[Setting]:
    for beta in BETAS:
        for n in SIZES:
            for suites in SUITE_COUNTS:
                for k_baseline, k in ((1, 1), (3, 3), (2, 5), (5, 2)):
                    yield Setting(
                        "gate", beta, n, suites, k, k_baseline, label=f"k {k_baseline} → {k}"
                    )
                for how, text in (
                    ("random", "at random"),
                    ("hard", "on hard cases"),
                    ("failing", "on failing attempts"),
                ):
                    yield Setting(
                        "gate",
                        beta,
                        n,
                        suites,
                        3,
                        3,
                        how,
                        UNRUN,
                        label=f"k 3 → 3, {100 * UNRUN:.0f} % did not run {text}",
                    )
                yield Setting(
                    "gate",
                    beta,
                    n,
                    suites,
                    3,
                    3,
                    "random",
                    0.02,
                    True,
                    label="k 3 → 3, 2 % of both runs did not run",
                )
                yield Setting(
                    "gate",
                    beta,
                    n,
                    suites,
                    3,
                    3,
                    "random",
                    OUTAGE,
                    label=f"k 3 → 3, outage: {100 * OUTAGE:.0f} % did not run",
                )
    for beta in BETAS:
        for n in (*SIZES, HIDDEN_SIZE):
            for k in (1, 3):
                yield Setting("hidden", beta, n, 3, k, k, "passing", HIDDEN, label=f"k {k}")
    for beta in BETAS:
        for n in SIZES:
            for k in (1, 3):
                for suites in SUITE_COUNTS:
                    yield Setting("power", beta, n, suites, k, k)


def false_alarms(setting: Setting, rng: np.random.Generator, count: int) -> dict[str, float]:
    """`count` pairs of runs of one assistant (part 1), or of the assistant and its 5xx
    twin (part 2, where `plain` is the gate had those attempts failed as answers): how each
    gate ends."""
    a, b = BETAS[setting.beta]
    sums: dict[str, float] = {"runs": 0.0}
    for _ in range(count):
        project = make_project(rng.beta(a, b, setting.n), even(setting.n, setting.suites))
        before_passed = attempts(rng, project.pi, setting.k_baseline)
        now_passed = attempts(rng, project.pi, setting.k)
        before_unrun = None
        if setting.both:
            before_unrun = unrun_mask(rng, setting.unrun, before_passed, project.pi, setting.share)
        now_unrun = None
        if setting.unrun:
            now_unrun = unrun_mask(rng, setting.unrun, now_passed, project.pi, setting.share)
        before = as_run(project, before_passed, before_unrun, "before")
        comparison = compare_rates(as_run(project, now_passed, now_unrun, "now"), before)
        ends = {"": comparison.gate, "old_": old_gate(comparison)}
        if setting.part == "hidden" and now_unrun is not None:
            failed = as_run(project, now_passed & ~now_unrun, None, "now")
            ends["plain_"] = compare_rates(failed, before).gate
        sums["runs"] += 1
        for prefix, end in ends.items():
            sums[prefix + end] = sums.get(prefix + end, 0.0) + 1
    return sums


def _scaled(pi: np.ndarray, members: np.ndarray, drop: float) -> np.ndarray:
    """π with the cases of `members` scaled so that their mean falls by `drop`."""
    dropped = pi.copy()
    dropped[members] *= max(0.0, 1 - drop / float(pi[members].mean()))
    return dropped


def power(setting: Setting, rng: np.random.Generator, count: int, reps: int) -> dict[str, float]:
    """`count` pilots (parts 3 and 4), each followed by `reps` comparisons per measure."""
    a, b = BETAS[setting.beta]
    k = setting.k
    sums: dict[str, float] = {"pilots": 0.0}

    def add(key: str, value: float) -> None:
        sums[key] = sums.get(key, 0.0) + value

    for _ in range(count):
        sums["pilots"] += 1
        counts = even(setting.n, setting.suites)
        project = make_project(rng.beta(a, b, setting.n), counts)
        last = as_run(project, attempts(rng, project.pi, k), None, "pilot")
        comparison = None
        if k == 1:
            first = as_run(project, attempts(rng, project.pi, k), None, "before")
            comparison = compare_rates(last, first)
        base = np.array([sum(case.passes) / k for case in last.cases.values()])
        suite, overall = plan(last, [project.suites[0]], k=k, drop=DROP, comparison=comparison)
        for name, stated, members in (
            ("overall", overall, project.groups[("overall", "")]),
            ("suite", suite, project.groups[("suite", project.suites[0])]),
        ):
            drop = stated.detectable_drop
            if drop is not None:
                dropped = _scaled(project.pi, members, drop)
                now = rng.binomial(k, dropped, size=(reps, project.n)) / k
                add(f"{name}_drop_answered", 1)
                add(f"{name}_drop", drop)
                add(f"{name}_drop_sq", drop * drop)
                add(f"{name}_drop_power", float(gate_fails(project, now, base).mean()))
                if name == "overall":
                    add("overall_drop_old", float(gate_fails(project, now, base, old=True).mean()))
            needed = stated.cases_needed
            if needed is None:
                continue
            add(f"{name}_cases_answered", 1)
            add(f"{name}_cases", needed)
            add(f"{name}_cases_sq", needed * needed)
            sizes = even(needed, setting.suites) if name == "overall" else [needed, *counts[1:]]
            layout = make_project(np.zeros(sum(sizes)), sizes)
            group = (
                layout.groups[("overall", "")]
                if name == "overall"
                else layout.groups[("suite", layout.suites[0])]
            )
            fresh = rng.beta(a, b, (reps, sum(sizes)))  # a new project for each comparison
            dropped = fresh.copy()
            dropped[:, group] *= np.clip(1 - DROP / fresh[:, group].mean(axis=1), 0, 1)[:, None]
            before = rng.binomial(k, fresh) / k
            now = rng.binomial(k, dropped) / k
            hits = float(gate_fails(layout, now, before).sum())
            add(f"{name}_cases_power", hits / reps)
    return sums


def _wilson_high(hits: float, n: float) -> float:
    if n == 0:
        return float("nan")
    p, z = hits / n, 1.96
    c = 1 + z * z / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / c


def simulate(
    chosen: Sequence[Setting], *, seed: int, comparisons: int, pilots: int, reps: int
) -> dict[Setting, dict[str, float]]:
    """Each setting's sums, seeded: a child of `seed` per setting, in order."""
    rows: dict[Setting, dict[str, float]] = {}
    for setting, child in zip(chosen, np.random.SeedSequence(seed).spawn(len(chosen)), strict=True):
        rng = np.random.default_rng(child)
        if setting.part == "power":
            rows[setting] = power(setting, rng, pilots, reps)
        else:
            rows[setting] = false_alarms(setting, rng, comparisons)
    return rows


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def _share(row: dict[str, float], key: str, total: str = "runs") -> str:
    return _percent(row.get(key, 0.0) / row[total]) if row[total] else "—"


def _stated(row: dict[str, float], name: str, part: str) -> list[str]:
    """The cells of one measure of a power row: answered, stated mean (sd), power."""
    answered = row.get(f"{name}_{part}_answered", 0.0)
    if not answered:
        return [f"0 of {row['pilots']:.0f}", "—", "—"]
    mean = row[f"{name}_{part}"] / answered
    sd = math.sqrt(max(0.0, row[f"{name}_{part}_sq"] / answered - mean * mean))
    shown = f"{100 * mean:.1f} pt ({100 * sd:.1f})" if part == "drop" else f"{mean:.0f} ({sd:.0f})"
    power = _percent(row[f"{name}_{part}_power"] / answered)
    return [f"{answered:.0f} of {row['pilots']:.0f}", shown, power]


def print_tables(rows: dict[Setting, dict[str, float]]) -> None:
    """The tables of docs/statistics.md#the-simulation, in Markdown."""
    print("False alarms: two runs of one assistant; the gate fails (exit 3) or cannot decide")
    print(f"(exit 4); upper = the 95 % Wilson bound of the rate of exit 3; α = {ALPHA}\n")
    print("| cases from | n | suites | runs | exit 3 | upper | exit 4 |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for setting, row in rows.items():
        if setting.part == "gate":
            upper = _wilson_high(row.get("failed", 0.0), row["runs"])
            print(
                f"| {setting.beta} | {setting.n} | {setting.suites} | {setting.label} "
                f"| {100 * row.get('failed', 0.0) / row['runs']:.2f} % | {100 * upper:.2f} % "
                f"| {_share(row, 'undecided')} |"
            )
    print(
        f"\nAn assistant that answers 5xx instead of a correct answer on {100 * HIDDEN:.1f} % "
        "of the attempts (3 suites): how often the gate passes (exit 0), fails (3), cannot "
        "decide (4); before = Holm over every group, the attempts that did not run left out; "
        "plain failures = the gate had those attempts been failed answers\n"
    )
    print("| cases from | n | k | before: 0 | 3 | 4 | now: 0 | 3 | 4 | plain failures: 3 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for setting, row in rows.items():
        if setting.part == "hidden":
            cells = [
                _share(row, key)
                for key in (
                    "old_passed",
                    "old_failed",
                    "old_undecided",
                    "passed",
                    "failed",
                    "undecided",
                    "plain_failed",
                )
            ]
            print(f"| {setting.beta} | {setting.n} | {setting.k} | " + " | ".join(cells) + " |")
    print(
        "\nPower at the drop `plan` states: overall (every case drops), and the first suite "
        "(its cases alone drop); before = the gate with Holm over every group, at the same drop\n"
    )
    print(
        "| cases from | n | k | suites | overall: drop stated | power | before "
        "| suite: answered | drop stated | power |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for setting, row in rows.items():
        if setting.part == "power":
            _, stated, power = _stated(row, "overall", "drop")
            before = _share(row, "overall_drop_old", "overall_drop_answered")
            suite = _stated(row, "suite", "drop")
            print(
                f"| {setting.beta} | {setting.n} | {setting.k} | {setting.suites} "
                f"| {stated} | {power} | {before} | " + " | ".join(suite) + " |"
            )
    print(
        f"\nPower with the cases `plan` states for a {100 * DROP:.0f}-point drop: overall, "
        "and the first suite (the others as they are)\n"
    )
    print(
        "| cases from | pilot n | k | suites | overall: cases stated | power "
        "| suite: answered | cases stated | power |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for setting, row in rows.items():
        if setting.part == "power":
            _, stated, power = _stated(row, "overall", "cases")
            suite = _stated(row, "suite", "cases")
            print(
                f"| {setting.beta} | {setting.n} | {setting.k} | {setting.suites} "
                f"| {stated} | {power} | " + " | ".join(suite) + " |"
            )


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument(
        "--comparisons", type=int, default=2000, help="comparisons per row of parts 1 and 2"
    )
    options.add_argument("--pilots", type=int, default=400, help="pilots per row of parts 3 and 4")
    options.add_argument("--reps", type=int, default=100, help="comparisons per pilot and measure")
    options.add_argument("--seed", type=int, default=20261201)
    options.add_argument("--quick", action="store_true", help="a tenth of the work")
    args = options.parse_args()
    scale = 10 if args.quick else 1
    began = time.process_time()
    rows = simulate(
        list(settings()),
        seed=args.seed,
        comparisons=args.comparisons // scale,
        pilots=args.pilots // scale,
        reps=max(1, args.reps // scale),
    )
    print(f"simulated in {time.process_time() - began:.0f} CPU-seconds, one process\n")
    print_tables(rows)


if __name__ == "__main__":
    main()
