"""Aggregate a scoring into the report of SPEC.md sections 8 and 10.

Test cases count in the aggregates only: the `cases` list, the comparison's case lists and
everything else that names a case hold dev cases alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import STATUSES, Split, Status

from .archive import REPORT, RunArchive, naming, write_json_atomically
from .compare import CaseRate, RunRates, compare_rates
from .manifest import Manifest
from .results import (
    AttemptResult,
    CaseResult,
    GradedAttempt,
    GradingSummary,
    PublicVerdict,
    Report,
    StatusCounts,
)
from .scoring import AttemptScore, CaseFigures, aggregate, case_figures


def build_report(
    manifest: Manifest,
    graded: Iterable[GradedAttempt],
    *,
    scoring: GradingSummary,
    previous: RunRates | None = None,
) -> Report:
    """Build the report of one scoring from its graded attempts (streamed once).

    With `previous`, the case rates of the previous run, `previous` of the report holds the
    comparison with it (SPEC.md section 10), at the default alpha.
    """
    scores: dict[str, list[AttemptScore]] = defaultdict(list)
    place: dict[str, tuple[str, Split]] = {}
    dev_attempts: dict[str, list[AttemptResult]] = defaultdict(list)
    criteria: dict[str, dict[Status, int]] = {}
    for attempt in graded:
        scores[attempt.case_id].append(AttemptScore(attempt.score, attempt.passed))
        place[attempt.case_id] = (attempt.suite, attempt.split)
        for verdict in attempt.verdicts:
            counts = criteria.setdefault(verdict.kind, dict.fromkeys(STATUSES, 0))
            counts[verdict.status] += 1
        if attempt.split == "dev":
            dev_attempts[attempt.case_id].append(
                AttemptResult(
                    attempt=attempt.attempt,
                    passed=attempt.passed,
                    score=attempt.score,
                    verdicts=tuple(PublicVerdict.of(verdict) for verdict in attempt.verdicts),
                )
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
            CaseResult(
                case_id=case_id,
                suite=place[case_id][0],
                split="dev",
                pass_rate=figure.pass_rate,
                mean_score=figure.mean_score,
                pass_at_k=figure.pass_at_k,
                pass_all_k=figure.pass_all_k,
                attempts=tuple(sorted(dev_attempts[case_id], key=lambda a: a.attempt)),
            )
        )
    report = Report(
        run_id=manifest.run_id,
        project=manifest.project,
        k=manifest.k,
        split=manifest.split,
        suites={
            name: aggregate(by_suite[name], manifest.k)
            for name in sorted(by_suite, key=lambda n: (suite_order.get(n, 0), n))
        },
        splits={name: aggregate(by_split[name], manifest.k) for name in sorted(by_split)},
        overall=aggregate(list(figures.values()), manifest.k),
        criteria={
            kind: StatusCounts.model_validate(counts) for kind, counts in sorted(criteria.items())
        },
        cases=tuple(cases),
        expected_attempts=len(manifest.cases) * manifest.k,
        scoring=scoring,
        prompts=dict(manifest.prompts),
        previous=None,
    )
    if previous is not None:
        now = RunRates(
            manifest.run_id,
            manifest.project,
            manifest.suites,
            {
                case_id: CaseRate(*place[case_id], manifest.cases.get(case_id), figure.pass_rate)
                for case_id, figure in figures.items()
            },
        )
        report = report.model_copy(update={"previous": compare_rates(now, previous)})
    return report


def load_report(path: Path) -> Report:
    """Read a `report.json`. Raises `ProjectError` when it is not a valid report."""
    with naming(path):
        data = path.read_bytes()
    try:
        return Report.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ProjectError(
            f"{path}: not a valid report ({field + ': ' if field else ''}{first['msg']}); "
            f"`soev-evals rescore {path.parents[2].name}` writes it anew from the evidence"
        ) from None


def write_report(scoring_dir: Path, report: Report) -> None:
    """Write `report.json` into a scoring folder, atomically."""
    write_json_atomically(scoring_dir / REPORT, report.model_dump(mode="json"))


def read_report(archive: RunArchive) -> Report:
    """The report of the run's latest scoring. Raises `ProjectError` when it has none."""
    archive.manifest()
    path = archive.latest_report_path()
    if path is None:
        raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring yet")
    return load_report(path)
