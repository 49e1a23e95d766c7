"""Render a report as readable text tables for the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from soev_pipeline.run.results import GroupFigures, Report


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return f"(no {columns[0]} with attempts)"
    frame = pd.DataFrame(list(rows), columns=list(columns))
    return str(frame.to_string(index=False))


def _groups(title: str, groups: Mapping[str, GroupFigures]) -> str:
    rows = [
        {
            title: name,
            "cases": figures.cases,
            "attempts": figures.attempts,
            "pass rate": _percent(figures.pass_rate),
            "mean score": _number(figures.mean_score),
            "pass@k": _percent(figures.pass_at_k),
            "pass^k": _percent(figures.pass_all_k),
        }
        for name, figures in groups.items()
    ]
    return _table(rows, [title, "cases", "attempts", "pass rate", "mean score", "pass@k", "pass^k"])


def _delta(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f} pt"


def _shorten(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render_report(report: Report) -> str:
    """The report as text: suites, splits, criteria, the failing dev cases, the comparison."""
    split = report.split or "dev+test"
    lines = [
        f"run {report.run_id}  project {report.project}  split {split}  "
        f"k={report.k}  scoring {report.scoring.scoring}",
        "",
        _groups("suite", report.suites),
        "",
        _groups("split", report.splits),
        "",
    ]
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
        for case in failing:
            lines.append(f"  {case.case_id} ({case.suite}): pass rate {_percent(case.pass_rate)}")
            for attempt in case.attempts:
                if attempt.passed:
                    continue
                for verdict in attempt.verdicts:
                    if verdict.status in ("fail", "error"):
                        gate = " gate" if verdict.gate else ""
                        lines.append(
                            f"    attempt {attempt.attempt}: {verdict.kind} "
                            f"{verdict.status}{gate}: {_shorten(verdict.detail)}"
                        )
        lines.append("")
    judge = report.scoring.judge
    if judge:
        lines.append("judge: " + ", ".join(f"{key} {value}" for key, value in judge.items()))
    previous = report.previous
    if previous is not None:
        deltas = ", ".join(
            f"{name} {_delta(entry.delta)}" for name, entry in previous.suites.items()
        )
        lines.append(f"compared with run {previous.run_id}: {deltas}")
        if previous.regressions:
            lines.append("  regressions: " + ", ".join(previous.regressions))
        if previous.improvements:
            lines.append("  improvements: " + ", ".join(previous.improvements))
    return "\n".join(lines).rstrip() + "\n"
