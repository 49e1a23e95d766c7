"""Aggregate a scoring into the report of SPEC.md section 8, and compare with the previous run.

Test cases count in the aggregates only: the `cases` list, the comparison's case lists and
everything else that names a case hold dev cases alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import STATUSES

from .archive import RunArchive, list_runs
from .grading import GradedAttempt
from .manifest import Manifest
from .scoring import AttemptScore, CaseFigures, aggregate, case_figures

PUBLIC_VERDICT_KEYS = ("kind", "status", "detail", "weight", "gate")


def build_report(
    manifest: Manifest,
    graded: Iterable[GradedAttempt],
    *,
    scoring: Mapping[str, Any] | None = None,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the report of one scoring from its graded attempts (streamed once)."""
    scores: dict[str, list[AttemptScore]] = defaultdict(list)
    place: dict[str, tuple[str, str]] = {}
    dev_attempts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    criteria: dict[str, dict[str, int]] = {}
    for attempt in graded:
        scores[attempt.case_id].append(AttemptScore(attempt.score, attempt.passed))
        place[attempt.case_id] = (attempt.suite, attempt.split)
        for verdict in attempt.verdicts:
            counts = criteria.setdefault(verdict.kind, dict.fromkeys(STATUSES, 0))
            counts[verdict.status] += 1
        if attempt.split == "dev":
            dev_attempts[attempt.case_id].append(
                {
                    "attempt": attempt.attempt,
                    "passed": attempt.passed,
                    "score": attempt.score,
                    "verdicts": [
                        {key: getattr(verdict, key) for key in PUBLIC_VERDICT_KEYS}
                        for verdict in attempt.verdicts
                    ],
                }
            )
    figures = {case_id: case_figures(values) for case_id, values in scores.items()}
    suite_order = {name: index for index, name in enumerate(manifest.suites)}
    by_suite: dict[str, list[CaseFigures]] = defaultdict(list)
    by_split: dict[str, list[CaseFigures]] = defaultdict(list)
    for case_id, figure in figures.items():
        suite, split = place[case_id]
        by_suite[suite].append(figure)
        by_split[split].append(figure)
    cases = []
    for case_id in sorted(dev_attempts, key=lambda c: (suite_order.get(place[c][0], 0), c)):
        figure = figures[case_id]
        cases.append(
            {
                "case_id": case_id,
                "suite": place[case_id][0],
                "split": "dev",
                "pass_rate": figure.pass_rate,
                "mean_score": figure.mean_score,
                "pass_at_k": figure.pass_at_k,
                "pass_all_k": figure.pass_all_k,
                "attempts": sorted(dev_attempts[case_id], key=lambda a: a["attempt"]),
            }
        )
    report: dict[str, Any] = {
        "run_id": manifest.run_id,
        "project": manifest.project,
        "k": manifest.k,
        "split": manifest.split,
        "suites": {
            name: aggregate(by_suite[name], manifest.k)
            for name in sorted(by_suite, key=lambda n: (suite_order.get(n, 0), n))
        },
        "splits": {name: aggregate(by_split[name], manifest.k) for name in sorted(by_split)},
        "criteria": dict(sorted(criteria.items())),
        "cases": cases,
        "expected_attempts": len(manifest.cases) * manifest.k,
        "scoring": dict(scoring or {}),
        "prompts": dict(manifest.prompts),
        "previous": None,
    }
    if previous is not None:
        report["previous"] = compare(report, previous)
    return report


def compare(report: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    """Compare a report with an earlier one: pass-rate deltas and dev cases that flipped."""

    def rate(group: Mapping[str, Any], name: str) -> float | None:
        entry = group.get(name)
        return None if entry is None else entry.get("pass_rate")

    def deltas(key: str) -> dict[str, dict[str, float | None]]:
        result = {}
        for name, entry in report[key].items():
            before = rate(previous.get(key, {}), name)
            now = entry.get("pass_rate")
            delta = None if before is None or now is None else now - before
            result[name] = {"pass_rate": now, "previous": before, "delta": delta}
        return result

    earlier = {case["case_id"]: case["pass_rate"] for case in previous.get("cases", [])}
    regressions, improvements = [], []
    for case in report["cases"]:
        before = earlier.get(case["case_id"])
        if before is None:
            continue
        if case["pass_rate"] < before:
            regressions.append(case["case_id"])
        elif case["pass_rate"] > before:
            improvements.append(case["case_id"])
    return {
        "run_id": previous.get("run_id"),
        "suites": deltas("suites"),
        "splits": deltas("splits"),
        "regressions": regressions,
        "improvements": improvements,
    }


def previous_report(runs_dir: Path, manifest: Manifest) -> dict[str, Any] | None:
    """The latest report of the newest earlier run of the same project, or None."""
    earlier = [
        run
        for run, other in list_runs(runs_dir)
        if run.run_id != manifest.run_id
        and other.project == manifest.project
        and other.created_at < manifest.created_at
    ]
    for run in reversed(earlier):
        report = run.latest_report()
        if report is not None:
            return report
    return None


def read_report(archive: RunArchive) -> dict[str, Any]:
    """The report of the run's latest scoring. Raises `ProjectError` when it has none."""
    archive.manifest()
    report = archive.latest_report()
    if report is None:
        raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring yet")
    return report
