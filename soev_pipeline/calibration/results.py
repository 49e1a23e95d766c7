"""What `soev-evals calibrate` finds, as typed models: what `calibrate --json` prints.

Field order is the order of the JSON keys (docs/judge.md#the-json-of-calibrate). The keys
of a run's corrected rates (`judge_pass_rate` and on) appear only when a run was given.
"""

from __future__ import annotations

from typing import Any

from soev_pipeline.core.models import FrozenModel

from .agreement import Confusion
from .labels import LeftOut

Interval = tuple[float, float]
RUN_KEYS = (
    "judge_pass_rate",
    "judged_attempts",
    "corrected_pass_rate",
    "corrected_ci95",
    "clipped",
    "corrected_why",
)
"""The keys of a criterion that a run gives (`calibrate --run RUN`)."""


class JudgeColumn(FrozenModel):
    """What the judge said of the items that people passed, or failed."""

    judge_pass: int
    judge_fail: int
    judge_error: int


class ConfusionTable(FrozenModel):
    """The items by the people's verdict (rows) and the judge's (columns)."""

    human_pass: JudgeColumn
    human_fail: JudgeColumn

    @classmethod
    def of(cls, table: Confusion) -> ConfusionTable:
        return cls(
            human_pass=JudgeColumn(
                judge_pass=table.pass_pass, judge_fail=table.pass_fail, judge_error=table.pass_error
            ),
            human_fail=JudgeColumn(
                judge_pass=table.fail_pass, judge_fail=table.fail_fail, judge_error=table.fail_error
            ),
        )


class CriterionFigures(FrozenModel):
    """How a judged criterion's judge agrees with the people (docs/judge.md#the-json-of-calibrate).

    `items` counts the items that a majority of people decided; `ties` those they split
    on evenly, which count only in `human_agreement` and `human_kappa`. `labels` is the
    label confusion, for the kinds whose judge gives one label per attempt (None for the
    others and for `overall`). `prompt_sha256` holds the digest of each prompt and rubric
    the judge graded these items with: the task's prompt under the task's name, a rubric
    file under its path, a rubric criterion as `criterion:<name>`.
    """

    items: int
    ties: int
    agreement: float | None
    judge_errors: int
    pass_recall: float | None
    pass_recall_ci95: Interval | None
    fail_recall: float | None
    fail_recall_ci95: Interval | None
    kappa: float | None
    kappa_ci95: Interval | None
    confusion: ConfusionTable
    labels: dict[str, dict[str, int]] | None
    human_agreement: float | None
    human_kappa: float | None
    prompt_sha256: dict[str, str]
    judge_pass_rate: float | None = None
    judged_attempts: int | None = None
    corrected_pass_rate: float | None = None
    corrected_ci95: Interval | None = None
    clipped: bool = False
    corrected_why: str | None = None


class Calibration(FrozenModel):
    """The judge measured against the human labels: per criterion, and over all of them.

    `labels_read` counts the label lines that count; `left_out` names every other line
    (its file, its line and why, never what it holds). `run_id` is the run whose judged
    rates were corrected, if any; `judge` the judge's counters (requests, calls, cache hits).
    """

    criteria: dict[str, CriterionFigures]
    overall: CriterionFigures
    labels_read: int
    left_out: tuple[LeftOut, ...]
    run_id: str | None = None
    judge: dict[str, Any] | None = None

    def gate_failures(self, minimum: float, min_items: int) -> dict[str, str]:
        """Why each criterion fails a gate of κ ≥ `minimum` on at least `min_items` items:
        κ below it, κ unknown, or too few items to tell (two agreeing labels prove nothing).
        """
        failures: dict[str, str] = {}
        for name, figures in self.criteria.items():
            if figures.items < min_items:
                failures[name] = f"{figures.items} items, fewer than {min_items}"
            elif figures.kappa is None:
                failures[name] = "κ unknown"
            elif figures.kappa < minimum:
                failures[name] = f"κ {figures.kappa:.2f}"
        return failures

    def to_json(self) -> dict[str, Any]:
        """The JSON of `calibrate --json`: without a run's keys when no run was given,
        and without `run_id` and `judge` when they are unknown."""
        data = self.model_dump(mode="json")

        def trim(figures: dict[str, Any]) -> dict[str, Any]:
            if self.run_id is None:
                for key in RUN_KEYS:
                    figures.pop(key)
            if figures["labels"] is None:
                figures.pop("labels")
            return figures

        data["criteria"] = {name: trim(value) for name, value in data["criteria"].items()}
        data["overall"] = trim(data["overall"])
        for key in ("run_id", "judge"):
            if data[key] is None:
                data.pop(key)
        return data
