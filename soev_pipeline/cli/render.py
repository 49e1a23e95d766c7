"""Render a report as readable text tables for the terminal."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from soev_pipeline.run.plan import GroupPlan
from soev_pipeline.run.results import Comparison, GroupFigures, Interval, PairedGroup, Report
from soev_pipeline.text import shorten

SMALL_GROUP = 5
"""Below this many cases (or pairs) an interval says little: the plain output says so."""


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _interval(bounds: Interval | None, *, signed: bool = False) -> str:
    if bounds is None:
        return ""
    if signed:
        return f" [{100 * bounds[0]:+.1f}, {100 * bounds[1]:+.1f}]"
    return f" [{100 * bounds[0]:.1f}–{100 * bounds[1]:.1f}]"


def rate(figures: GroupFigures) -> str:
    """A pass rate with its 95 % interval, e.g. `77.8 % [55.4–91.0]`."""
    return _percent(figures.pass_rate) + _interval(figures.ci95)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """`rows` as a plain table: the first column (the names) aligned left, the figures
    right, two spaces between columns. (pandas did this once, at the cost of importing it
    and pyarrow after every run: a third of a second and 70 MB.)"""
    if not rows:
        return f"(no {columns[0]} with attempts)"
    cells = [list(columns)] + [
        ["—" if row.get(column) is None else str(row[column]) for column in columns] for row in rows
    ]
    widths = [max(len(line[at]) for line in cells) for at in range(len(columns))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if at == 0 else cell.rjust(width)
            for at, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in cells
    )


def _small(counts: Mapping[str, int], noun: str) -> list[str]:
    """A line naming the groups with fewer than `SMALL_GROUP` cases, when there are any."""
    small = [f"{name} ({count})" for name, count in counts.items() if 0 < count < SMALL_GROUP]
    if not small:
        return []
    return [
        f"fewer than {SMALL_GROUP} {noun}: {', '.join(small)}; their intervals and tests say "
        "little (docs/statistics.md)"
    ]


def _groups(title: str, groups: Mapping[str, GroupFigures]) -> str:
    rows = [
        {
            title: name,
            "cases": figures.cases,
            "attempts": figures.attempts,
            "pass rate [95% CI]": rate(figures),
            "mean score": _number(figures.mean_score),
            "pass@k": _percent(figures.pass_at_k),
            "pass^k": _percent(figures.pass_all_k),
        }
        for name, figures in groups.items()
    ]
    columns = [title, "cases", "attempts", "pass rate [95% CI]", "mean score", "pass@k", "pass^k"]
    return _table(rows, columns)


def _delta(group: PairedGroup) -> str:
    if group.delta is None:
        return "—"
    return f"{100 * group.delta:+.1f} pt" + _interval(group.ci95, signed=True)


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _worst(group: PairedGroup) -> str:
    if group.worst_case_delta is None:
        return "—"
    return f"{100 * group.worst_case_delta:+.1f} pt ({_p(group.worst_case_p_holm)})"


def render_comparison(comparison: Comparison) -> str:
    """A comparison as one table (group, pairs, baseline → now, Δ with its ci95, p adjusted
    over the gate's family, verdict; with attempts that did not run, the bound least
    favourable to the run), then the attempts that did not run, what they could hide, the
    counts and the dev cases that changed."""
    groups = list(comparison.groups().items())
    bounded = comparison.overall.worst_case_delta is not None
    rows = [
        {
            "group": name,
            "pairs": group.pairs,
            "baseline → now": f"{_percent(group.baseline_pass_rate)} → {_percent(group.pass_rate)}",
            "Δ [95% CI]": _delta(group),
            "p (adjusted)": _p(group.p_holm if group.p_holm is not None else group.p_value),
            "worst case Δ (p)": _worst(group),
            "verdict": group.verdict,
        }
        for name, group in groups
    ]
    columns = ["group", "pairs", "baseline → now", "Δ [95% CI]", "p (adjusted)"]
    columns += ["worst case Δ (p)"] if bounded else []
    lines = [
        f"run {comparison.run_id} against baseline {comparison.baseline_id} "
        f"(alpha {comparison.alpha:g}; p is adjusted over the gate's family: overall first, "
        "then Holm over the other groups with a changed pair)",
        "",
        _table(rows, [*columns, "verdict"]),
        "",
        *_small({name: group.pairs for name, group in groups}, "pairs"),
        f"attempts that did not run: run {comparison.run_id}: {comparison.unrun.run.describe()}; "
        f"baseline {comparison.baseline_id}: {comparison.unrun.baseline.describe()}",
    ]
    if comparison.inconclusive:
        lines.append(
            "inconclusive: too many attempts did not run for the comparison to decide; "
            "run again once the system answers"
        )
    elif comparison.could_hide_regression():
        lines.append(f"inconclusive: {comparison.why_undecided()}")
    elif bounded:
        lines.append(
            "the attempts that did not run cannot hide a regression: counted as failed in run "
            f"{comparison.run_id} and as passed in baseline {comparison.baseline_id} (the "
            "worst case), they show none that the comparison does not"
        )
    lines.append(
        f"cases changed since the baseline (not paired): {comparison.changed_cases}; "
        f"cases in one run only: {comparison.unpaired_cases}; "
        f"cases without an attempt that ran in both: {comparison.unrun_cases}"
    )
    for title, changes in (
        ("dev cases that regressed", comparison.regressions),
        ("dev cases that improved", comparison.improvements),
    ):
        if changes:
            lines.append(f"{title} ({len(changes)}):")
            lines += [
                f"  {change.case_id} ({change.suite}): "
                f"{_percent(change.baseline_pass_rate)} → {_percent(change.pass_rate)}"
                for change in changes
            ]
    return "\n".join(lines) + "\n"


FAILING_CASES_SHOWN = 50
"""The failing dev cases the text report lists with what failed them; the rest are counted
(a terminal is no place for 5,000 of them, nor is the memory of printing them)."""


def render_report(report: Report) -> str:
    """The report as text: suites, splits, criteria, the failing dev cases, the comparison."""
    split = report.split or "dev+test"
    lines = [
        f"run {report.run_id}  project {report.project}  split {split}  "
        f"k={report.k}  scoring {report.scoring.scoring}",
        "",
        _groups("suite", report.suites),
        "",
        _groups("split", {**report.splits, "overall": report.overall}),
        "",
        *_small(
            {
                **{f"suite {name}": figures.cases for name, figures in report.suites.items()},
                **{f"split {name}": figures.cases for name, figures in report.splits.items()},
                "overall": report.overall.cases,
            },
            "cases",
        ),
    ]
    if report.unrun.attempts:
        lines.append(
            f"attempts that did not run: {report.unrun.describe(report.expected_attempts)}; "
            "they count as failed"
        )
        if report.inconclusive:
            lines.append(
                "inconclusive: more than 5 % of the attempts did not run; these figures "
                "say more about the system's availability than about its answers"
            )
    if lines[-1]:
        lines.append("")
    criteria = [
        {
            "criterion": kind,
            "pass": counts.pass_,
            "fail": counts.fail,
            "error": counts.error,
            "n/a": counts.not_applicable,
        }
        for kind, counts in report.criteria.items()
    ]
    if criteria:
        lines += [_table(criteria, ["criterion", "pass", "fail", "error", "n/a"]), ""]
    failing = [case for case in report.cases if case.pass_rate < 1.0]
    if failing:
        lines.append(f"dev cases that did not pass every attempt ({len(failing)}):")
        for case in failing[:FAILING_CASES_SHOWN]:
            lines.append(f"  {case.case_id} ({case.suite}): pass rate {_percent(case.pass_rate)}")
            for attempt in case.attempts:
                if attempt.unrun is not None:
                    lines.append(f"    attempt {attempt.attempt}: did not run: {attempt.unrun}")
                if attempt.passed or attempt.unrun is not None:
                    continue
                for verdict in attempt.verdicts:
                    if verdict.status in ("fail", "error"):
                        gate = " gate" if verdict.gate else ""
                        lines.append(
                            f"    attempt {attempt.attempt}: {verdict.kind} "
                            f"{verdict.status}{gate}: {shorten(verdict.detail, 110, flatten=True)}"
                        )
        if len(failing) > FAILING_CASES_SHOWN:
            lines.append(
                f"  … and {len(failing) - FAILING_CASES_SHOWN} more: `report "
                f"{report.run_id} --json` lists every case, `soev-evals view` shows them"
            )
        lines.append("")
    judge = report.scoring.judge
    if judge:
        lines.append("judge: " + ", ".join(f"{key} {value}" for key, value in judge.items()))
    if report.previous is not None:
        lines += ["", "compared with the previous run:", render_comparison(report.previous)]
    return "\n".join(lines).rstrip() + "\n"


def _points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} pt"


def render_plan(
    groups: Sequence[GroupPlan], *, run_id: str, run_k: int, k: int, drop: float
) -> str:
    """The power plan as a table: what each group detects now, and the cases it needs."""
    needed = f"cases for {100 * drop:.0f} pt at k={k}"
    rows = [
        {
            "group": group.name,
            "cases": group.cases,
            "pass rate": _percent(group.pass_rate),
            "detects now": _points(group.detectable_drop),
            needed: "—" if group.cases_needed is None else str(group.cases_needed),
        }
        for group in groups
    ]
    lines = [
        f"power from run {run_id} (k={run_k}): the drop in pass rate that the gate "
        "(compare --fail-on-regression, overall first) detects with 80 % power at alpha "
        "0.05, and the cases that detect a given drop; a drop scales every case of the "
        "group, and a suite's is found only when it moves the whole run",
        "",
        _table(rows, ["group", "cases", "pass rate", "detects now", needed]),
        "",
    ]
    sources = sorted({group.variance_from for group in groups if group.variance_from})
    if sources:
        lines.append(f"the variance between attempts comes from: {'; '.join(sources)}")
    for group in groups:
        if group.needs is not None:
            lines.append(f"{group.name}: cannot tell yet; needs {group.needs}")
        elif group.note is not None:
            lines.append(f"{group.name}: no number of cases: {group.note}")
        elif group.detectable_drop is None and group.cases >= 2:
            lines.append(
                f"{group.name}: no drop is detected with 80 % power by {group.cases} cases"
            )
    return "\n".join(lines).rstrip() + "\n"


def write_report_json(report: Report, out: TextIO) -> None:
    """Write `report` to `out` as `json.dumps(report.model_dump(mode="json"), indent=2)` does,
    and a newline, one case at a time.

    A large run's case list holds every verdict of its dev cases: as one dict and one string
    it takes several times the memory of the report itself, so each case is encoded and
    written on its own; the text is the same, byte for byte.
    """
    head = report.model_copy(update={"cases": ()}).model_dump(mode="json")
    text = json.dumps(head, ensure_ascii=False, indent=2)
    # JSON strings hold no raw newline, so the top-level key is the line at two spaces
    lines = text.split("\n")
    at = next(n for n, line in enumerate(lines) if line in ('  "cases": [],', '  "cases": []'))
    comma = "," if lines[at].endswith(",") else ""
    out.write("\n".join(lines[:at]) + "\n")
    if not report.cases:
        out.write(lines[at] + "\n")
    else:
        out.write('  "cases": [\n')
        for number, case in enumerate(report.cases):
            encoded = json.dumps(case.model_dump(mode="json"), ensure_ascii=False, indent=2)
            separator = ",\n" if number < len(report.cases) - 1 else "\n"
            out.write("    " + encoded.replace("\n", "\n    ") + separator)
        out.write(f"  ]{comma}\n")
    out.write("\n".join(lines[at + 1 :]) + "\n")
