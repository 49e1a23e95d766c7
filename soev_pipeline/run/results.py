"""The results of a scoring as typed models: graded attempts, the scoring summary, the report.

Each model is what one file of a scoring folder holds: a `GradedAttempt` is a line of
`verdicts.jsonl`, a `GradingSummary` is `scoring.json`, a `Report` is what `report RUN
--json` prints (SPEC.md section 8) and, without its `cases`, which the verdicts hold,
`report.json`. Field order is the order of the JSON keys.
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


Interval = tuple[float, float]


class GroupFigures(FrozenModel):
    """The figures of a suite, a split or the whole run: counts, and means of its case figures.

    The means are null for a group without cases. `pass_at` holds the unbiased pass@j
    estimate for every j up to the smallest number of attempts of a case, keyed by j.
    `stderr`, `ci95` and `detectable_drop` are the error bars of `pass_rate` (SPEC.md
    section 10), with the case as the unit.
    """

    cases: int
    attempts: int
    passed_attempts: int
    pass_rate: float | None
    mean_score: float | None
    pass_at_k: float | None
    pass_all_k: float | None
    pass_at: dict[str, float | None]
    stderr: float | None
    ci95: Interval | None
    detectable_drop: float | None


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


class PairedGroup(FrozenModel):
    """A group of cases that two runs share (SPEC.md section 10): the change and its test.

    `p_holm` is set for suites only: the p-value adjusted over the suites of the comparison.
    `verdict` is `regressed` or `improved` when the change is significant at `alpha`.
    """

    pairs: int
    pass_rate: float | None
    baseline_pass_rate: float | None
    delta: float | None
    stderr: float | None
    ci95: Interval | None
    improved: int
    regressed: int
    unchanged: int
    p_value: float
    p_holm: float | None = Field(default=None, exclude_if=lambda value: value is None)
    verdict: Literal["regressed", "improved", "unchanged"]


class CaseChange(FrozenModel):
    """A dev case whose pass rate changed between the two runs."""

    case_id: str
    suite: str
    pass_rate: float
    baseline_pass_rate: float


class Comparison(FrozenModel):
    """Two runs of one project compared case by case (`soev-evals compare`, `previous`).

    Pairs are the cases both runs graded with the same case digest; the others are counted
    in `changed_cases` (same id, other digest) and `unpaired_cases` (in one run only).
    `regressions` and `improvements` name dev cases only.
    """

    run_id: str
    baseline_id: str
    alpha: float
    changed_cases: int
    unpaired_cases: int
    overall: PairedGroup
    suites: dict[str, PairedGroup]
    splits: dict[str, PairedGroup]
    regressions: tuple[CaseChange, ...]
    improvements: tuple[CaseChange, ...]

    @property
    def regressed(self) -> bool:
        """Whether any group's verdict is `regressed`: the gate of `--fail-on-regression`."""
        groups = [self.overall, *self.suites.values(), *self.splits.values()]
        return any(group.verdict == "regressed" for group in groups)


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
    overall: GroupFigures
    criteria: dict[str, StatusCounts]
    cases: tuple[CaseResult, ...]
    expected_attempts: int
    scoring: GradingSummary
    prompts: dict[str, str]
    previous: Comparison | None
