"""The results of a scoring as typed models: graded attempts, the scoring summary, the report.

Each model is what one file of a scoring folder holds: a `GradedAttempt` is a line of
`verdicts.jsonl`, a `GradingSummary` is `scoring.json`, a `Report` is `report.json` and what
`report RUN --json` prints (SPEC.md section 8). Field order is the order of the JSON keys.
`docs/report.schema.json` is generated from `Report` by `scripts/report_schema.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from soev_pipeline.core.models import FrozenModel, Split, Status, Verdict


class GradedAttempt(FrozenModel):
    """One line of `verdicts.jsonl`: an attempt's verdicts, whole, with its score and pass."""

    case_id: str
    suite: str
    split: Split
    attempt: int
    score: float | None
    passed: bool
    verdicts: tuple[Verdict, ...]


class GradingSummary(FrozenModel):
    """What a grading did, in counts: the scoring folder's `scoring.json`.

    `created_at` stays the ISO text it was written as, so a report reads back unchanged.
    """

    scoring: str
    created_at: str
    attempts: int
    skipped: int
    statuses: dict[Status, int]
    criterion_versions: dict[str, str]
    prompts: dict[str, str]
    offline: bool
    judge: dict[str, JsonValue] | None


class GroupFigures(FrozenModel):
    """The figures of a suite or a split: counts, and means of its case figures.

    The means are null for a group without cases. `pass_at` holds the unbiased pass@j
    estimate for every j up to the smallest number of attempts of a case, keyed by j.
    """

    cases: int
    attempts: int
    passed_attempts: int
    pass_rate: float | None
    mean_score: float | None
    pass_at_k: float | None
    pass_all_k: float | None
    pass_at: dict[str, float | None]


class StatusCounts(FrozenModel):
    """How many verdicts of a criterion had each status."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True)

    pass_: int = Field(alias="pass")
    fail: int
    error: int
    not_applicable: int

    def as_dict(self) -> dict[Status, int]:
        """The counts keyed by status, in the order of the JSON."""
        return {
            "pass": self.pass_,
            "fail": self.fail,
            "error": self.error,
            "not_applicable": self.not_applicable,
        }


class PublicVerdict(FrozenModel):
    """A verdict as a report shows it: without versions, judge model or prompt hashes."""

    kind: str
    status: Status
    detail: str
    weight: float
    gate: bool

    @classmethod
    def of(cls, verdict: Verdict) -> PublicVerdict:
        return cls(
            kind=verdict.kind,
            status=verdict.status,
            detail=verdict.detail,
            weight=verdict.weight,
            gate=verdict.gate,
        )


class AttemptResult(FrozenModel):
    """One attempt of a dev case in the report."""

    attempt: int
    passed: bool
    score: float | None
    verdicts: tuple[PublicVerdict, ...]


class CaseResult(FrozenModel):
    """A dev case in the report: its figures over its attempts, and the attempts."""

    case_id: str
    suite: str
    split: Literal["dev"]
    pass_rate: float
    mean_score: float | None
    pass_at_k: bool
    pass_all_k: bool
    attempts: tuple[AttemptResult, ...]


class RateDelta(FrozenModel):
    """A group's pass rate now and in the previous run, and the change; null where unknown."""

    pass_rate: float | None
    previous: float | None
    delta: float | None


class Comparison(FrozenModel):
    """The comparison with the previous run: pass-rate deltas and the dev cases that flipped."""

    run_id: str
    suites: dict[str, RateDelta]
    splits: dict[str, RateDelta]
    regressions: tuple[str, ...]
    improvements: tuple[str, ...]


class Report(FrozenModel):
    """The report of one scoring (SPEC.md section 8).

    Test cases count in `suites`, `splits` and `criteria` alone: `cases` holds dev cases only.
    """

    run_id: str
    project: str
    k: int
    split: Split | None
    suites: dict[str, GroupFigures]
    splits: dict[str, GroupFigures]
    criteria: dict[str, StatusCounts]
    cases: tuple[CaseResult, ...]
    expected_attempts: int
    scoring: GradingSummary
    prompts: dict[str, str]
    previous: Comparison | None
