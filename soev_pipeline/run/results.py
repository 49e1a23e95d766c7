"""The results of a scoring as typed models: graded attempts, the scoring summary, the report.

Each model is what one file of a scoring folder holds: a `GradedAttempt` is a line of
`verdicts.jsonl`, a `GradingSummary` is `scoring.json`, a `Report` is what `report RUN
--json` prints (docs/runs.md#the-reports-fields) and, without its `cases`, which the
verdicts hold, `report.json`. Field order is the order of the JSON keys.
`docs/report.schema.json` is generated from `Report` by `scripts/report_schema.py`.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

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


PublicKey = tuple[str, Status, str, float, bool]
"""A verdict as a report shows it (`PublicVerdict`): kind, status, detail, weight, gate."""


def public_key(verdict: Verdict) -> PublicKey:
    """The part of `verdict` that a report shows, as a plain tuple."""
    return (verdict.kind, verdict.status, verdict.detail, verdict.weight, verdict.gate)


class Folded(NamedTuple):
    """What a report keeps of a graded attempt (`report.ReportFold`): where it belongs,
    its score and pass, and each verdict as the report shows it. Plain tuples, which cost
    little to send from a grading worker."""

    case_id: str
    suite: str
    split: Split
    attempt: int
    score: float | None
    passed: bool
    verdicts: tuple[PublicKey, ...]

    @classmethod
    def of(cls, graded: GradedAttempt) -> Folded:
        return cls(
            graded.case_id,
            graded.suite,
            graded.split,
            graded.attempt,
            graded.score,
            graded.passed,
            tuple(map(public_key, graded.verdicts)),
        )


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

INTERRUPTED = "interrupted"
"""The code of a planned attempt that has no evidence."""


class GroupFigures(FrozenModel):
    """The figures of a suite, a split or the whole run: counts, and means of its case figures.

    The means are null for a group without cases. `pass_at` holds the unbiased pass@j
    estimate for every j up to the smallest number of attempts of a case, keyed by j.
    `stderr`, `ci95` and `detectable_drop` are the error bars of `pass_rate`
    (docs/statistics.md#one-run-stderr-ci95-and-detectable_drop), with the case as the
    unit. `unrun_attempts` did not run (infrastructure failures, interruptions); they count
    in `attempts` and as failed. A report written before they were counted reads as 0.
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
    unrun_attempts: int = 0


class UnrunTally(FrozenModel):
    """The attempts of a run that did not run, and their failure codes with counts
    (`interrupted` for a planned attempt without evidence)."""

    attempts: int = 0
    codes: dict[str, int] = Field(default_factory=dict)

    def describe(self, planned: int | None = None) -> str:
        """E.g. `15 of 100 attempts did not run (connect_error 12, http_503 3)`, with `of
        100` when `planned` is given."""
        if not self.attempts:
            return "every attempt ran"
        codes = ", ".join(f"{code} {count}" for code, count in self.codes.items())
        if planned is not None:
            return f"{self.attempts} of {planned} attempts did not run ({codes})"
        noun = "attempt" if self.attempts == 1 else "attempts"
        return f"{self.attempts} {noun} did not run ({codes})"


class UnrunPair(FrozenModel):
    """The attempts that did not run in each run of a comparison."""

    run: UnrunTally = UnrunTally()
    baseline: UnrunTally = UnrunTally()


class CalibratedRate(FrozenModel):
    """A judged criterion's rate in a run, corrected for the judge's errors that the human
    labels measured (docs/statistics.md#the-corrected-rate); `report RUN --json` adds it
    when the project has labels, and report.json never holds it.

    `items`, `judge_errors`, `kappa` and the recalls measure the judge on the labelled items
    of the kind (an error counted as its fail);
    `judge_pass_rate` is its pass rate over the run's `judged_attempts` verdicts (an error
    a fail, attempts that did not run left out); `corrected_pass_rate` is that rate
    corrected (Rogan–Gladen), with an interval that carries the uncertainty of all three;
    `null` when the judge is not shown to be better than chance (or a rate or a recall is
    missing), and then `corrected_why` says why. `clipped` is true when the formula gave a
    value outside [0, 1], shown as 0 or 1. `prompts_match` says whether the run was graded
    with the prompts the labels measured.
    """

    items: int
    judge_errors: int
    kappa: float | None
    pass_recall: float | None
    fail_recall: float | None
    judge_pass_rate: float | None
    judged_attempts: int
    corrected_pass_rate: float | None
    corrected_ci95: Interval | None
    prompts_match: bool
    clipped: bool = False
    corrected_why: str | None = None


class StatusCounts(FrozenModel):
    """How many verdicts of a criterion had each status; for a judged criterion of a
    project with labels, as `report --json` prints it, also its `calibrated` rate."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True)

    pass_: int = Field(alias="pass")
    fail: int
    error: int
    not_applicable: int
    calibrated: CalibratedRate | None = Field(default=None, exclude_if=lambda value: value is None)

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
        return cls.of_key(public_key(verdict))

    @classmethod
    def of_key(cls, key: PublicKey) -> PublicVerdict:
        kind, status, detail, weight, gate = key
        return cls(kind=kind, status=status, detail=detail, weight=weight, gate=gate)


class AttemptResult(FrozenModel):
    """One attempt of a dev case in the report.

    `unrun` is the failure code that kept the attempt from running (`interrupted` for a
    planned attempt without evidence, which has no verdicts); such an attempt has not
    passed. It is left out of the JSON when the attempt ran.
    """

    attempt: int
    passed: bool
    score: float | None
    verdicts: tuple[PublicVerdict, ...]
    unrun: str | None = Field(default=None, exclude_if=lambda value: value is None)


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


Reason = Literal["too_many_unrun", "unrun_could_hide_regression"]


class PairedGroup(FrozenModel):
    """A group of cases that two runs share: the change and its test
    (docs/statistics.md#two-runs-paired-differences-and-the-sign-test).

    The rates are those of the first m attempts that ran in both runs, case by case.
    `p_holm` is the p-value adjusted over the gate's family (overall first, then Holm over
    the other groups with a changed pair: docs/statistics.md#the-gates-family-overall-first);
    1 for a group without a changed pair. (A comparison stored before the family took in
    every group has it on its suites only.) `worst_case_delta` and `worst_case_p_holm` are
    the same figures on the bound least favourable to the run, where its attempts that did
    not run count as failed and the baseline's as passed; null when every attempt of both
    runs ran (docs/statistics.md#could-the-attempts-that-did-not-run-hide-a-regression).
    `verdict` is
    `regressed` or `improved` when the change is significant at `alpha`, and
    `inconclusive` with its `reason`: `too_many_unrun` in every group when too many
    attempts did not run, `unrun_could_hide_regression` when the bound is a significant
    regression and the comparison is not.
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
    worst_case_delta: float | None = None
    worst_case_p_holm: float | None = None
    verdict: Literal["regressed", "improved", "unchanged", "inconclusive"]
    reason: Reason | None = None


class CaseChange(FrozenModel):
    """A dev case whose pass rate changed between the two runs."""

    case_id: str
    suite: str
    pass_rate: float
    baseline_pass_rate: float


class Comparison(FrozenModel):
    """Two runs of one project compared case by case (`soev-evals compare`, `previous`).

    Pairs are the cases both runs graded with the same case digest and at least one
    attempt that ran in each; the others are counted in `changed_cases` (same id, other
    digest), `unpaired_cases` (in one run only) and `unrun_cases` (no attempt ran in one of
    the runs). `unrun` counts the attempts of each run that did not run, by failure code;
    with too many of them the comparison is `inconclusive` and so is every verdict.
    `regressions` and `improvements` name dev cases only.
    """

    run_id: str
    baseline_id: str
    alpha: float
    changed_cases: int
    unpaired_cases: int
    unrun_cases: int = 0
    unrun: UnrunPair = UnrunPair()
    inconclusive: bool = False
    overall: PairedGroup
    suites: dict[str, PairedGroup]
    splits: dict[str, PairedGroup]
    regressions: tuple[CaseChange, ...]
    improvements: tuple[CaseChange, ...]

    def groups(self) -> dict[str, PairedGroup]:
        """Every group by a name for display: `overall`, `suite NAME`, `split NAME`."""
        return {
            "overall": self.overall,
            **{f"suite {name}": group for name, group in self.suites.items()},
            **{f"split {name}": group for name, group in self.splits.items()},
        }

    @property
    def regressed(self) -> bool:
        """Whether any group's verdict is `regressed`: the gate of `--fail-on-regression`."""
        return any(group.verdict == "regressed" for group in self.groups().values())

    def could_hide_regression(self) -> dict[str, PairedGroup]:
        """The groups whose attempts that did not run could hide a regression (by name)."""
        return {
            name: group
            for name, group in self.groups().items()
            if group.reason == "unrun_could_hide_regression"
        }

    @property
    def gate(self) -> Literal["failed", "undecided", "passed"]:
        """What `--fail-on-regression` makes of the comparison: `failed` (exit 3) when a
        group regressed; `undecided` (exit 4) when the comparison is inconclusive or the
        attempts that did not run could hide a regression; else `passed`."""
        if self.regressed:
            return "failed"
        if self.inconclusive or self.could_hide_regression():
            return "undecided"
        return "passed"

    def why_inconclusive(self) -> str | None:
        """Why the gate cannot decide, in a line naming both runs' failure codes; None
        when the comparison is not inconclusive."""
        if not self.inconclusive:
            return None
        return (
            f"too many attempts did not run: run {self.run_id}: {self.unrun.run.describe()}; "
            f"baseline {self.baseline_id}: {self.unrun.baseline.describe()}"
        )

    def why_undecided(self) -> str | None:
        """Why the gate cannot decide, in one line that says what to do; None when it can.

        Either too many attempts did not run (`why_inconclusive`), or the attempts that
        did not run could hide a regression: counted as failed in the run and as passed in
        the baseline, a group regressed significantly.
        """
        if self.inconclusive:
            return self.why_inconclusive()
        hidden = self.could_hide_regression()
        if not hidden:
            return None
        name, group = next(iter(hidden.items()))
        drop = 100 * (group.worst_case_delta or 0.0)
        p = group.worst_case_p_holm if group.worst_case_p_holm is not None else 1.0
        again = (
            f"resume run {self.run_id} (soev-evals run --resume {self.run_id}) or run the "
            "suites again"
            if INTERRUPTED in self.unrun.run.codes
            else "run the suites again"
        )
        return (
            f"the attempts that did not run could hide a regression in {', '.join(hidden)}: "
            f"counted as failed in run {self.run_id} ({self.unrun.run.describe()}) and as "
            f"passed in baseline {self.baseline_id} ({self.unrun.baseline.describe()}), "
            f"{name} changes by {drop:+.1f} pt (adjusted p {p:.3g}); {again} and compare "
            "again (5xx that come back on the same cases are the assistant's own failures)"
        )


class Report(FrozenModel):
    """The report of one scoring (docs/runs.md#the-reports-fields).

    Test cases count in `suites`, `splits` and `criteria` alone: `cases` holds dev cases only.
    `unrun` counts the attempts of the run that did not run, with their codes (a case none
    of whose attempts was archived counts there, not in the groups: nothing says which
    suite it belongs to); more than 5 % of `expected_attempts` make the run `inconclusive`.
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
    unrun: UnrunTally = UnrunTally()
    inconclusive: bool = False
    scoring: GradingSummary
    prompts: dict[str, str]
    previous: Comparison | None
