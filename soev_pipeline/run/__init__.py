"""Runs: the archive, the manifest, attempts, grading, scoring and the report."""

from .archive import RunArchive, check_run_id, list_runs, new_run_id
from .attempts import plan_attempts, run_attempts, select_cases
from .compare import compare_rates, compare_runs
from .grading import grade_attempt, grade_evidence, iter_graded
from .manifest import Manifest, build_manifest, check_resumable
from .report import build_report, read_report
from .results import (
    AttemptResult,
    CalibratedRate,
    CaseChange,
    CaseResult,
    Comparison,
    GradedAttempt,
    GradingSummary,
    GroupFigures,
    PairedGroup,
    PublicVerdict,
    Report,
    StatusCounts,
)
from .run_attempts import previous_run, read_attempts
from .scoring import (
    AttemptScore,
    CaseFigures,
    aggregate,
    case_figures,
    pass_at_k_estimate,
    score_attempt,
)

__all__ = [
    "AttemptResult",
    "AttemptScore",
    "CalibratedRate",
    "CaseChange",
    "CaseFigures",
    "CaseResult",
    "Comparison",
    "GradedAttempt",
    "GradingSummary",
    "GroupFigures",
    "Manifest",
    "PairedGroup",
    "PublicVerdict",
    "Report",
    "RunArchive",
    "StatusCounts",
    "aggregate",
    "build_manifest",
    "build_report",
    "case_figures",
    "check_resumable",
    "check_run_id",
    "compare_rates",
    "compare_runs",
    "grade_attempt",
    "grade_evidence",
    "iter_graded",
    "list_runs",
    "new_run_id",
    "pass_at_k_estimate",
    "plan_attempts",
    "previous_run",
    "read_attempts",
    "read_report",
    "run_attempts",
    "score_attempt",
    "select_cases",
]
