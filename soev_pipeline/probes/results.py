"""What `soev-evals probe-judge` finds, as typed models: what `probe-judge --json` prints.

Field order is the order of the JSON keys (docs/judge.md#the-json-of-probe-judge).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from soev_pipeline.core.models import FrozenModel
from soev_pipeline.core.stats import wilson

from .builders import ProbeKind

DEFAULT_MAX_FLIP = 0.05
"""The flip rate an invariance probe must be shown to exceed (its interval's lower bound)
before the figures call it a bias, when neither `--max-flip` nor `probes.max_flip` says."""

Interval = tuple[float, float]


class ProbeFigures(FrozenModel):
    """One probe of one criterion: how often the judge's verdict moved.

    `items` counts the items where both the original and the probed verdict are a pass or a
    fail; `judge_errors` those where either is an error (they count nowhere else). A
    sensitivity probe counts only the items the judge passed: a reply it failed cannot be
    made to fail.
    """

    kind: ProbeKind
    items: int
    flipped: int
    to_pass: int
    to_fail: int
    judge_errors: int
    flip_rate: float | None
    flip_ci95: Interval | None

    @classmethod
    def of(cls, kind: ProbeKind, pairs: Iterable[tuple[str, str]]) -> ProbeFigures:
        """The figures of (original status, probed status) pairs."""
        items = to_pass = to_fail = errors = 0
        for before, after in pairs:
            if before not in ("pass", "fail") or after not in ("pass", "fail"):
                errors += 1
                continue
            items += 1
            to_pass += before == "fail" and after == "pass"
            to_fail += before == "pass" and after == "fail"
        flipped = to_pass + to_fail
        rate = flipped / items if items else None
        return cls(
            kind=kind,
            items=items,
            flipped=flipped,
            to_pass=to_pass,
            to_fail=to_fail,
            judge_errors=errors,
            flip_rate=rate,
            flip_ci95=wilson(rate, items) if rate is not None else None,
        )

    @property
    def lower(self) -> float | None:
        """The lower bound of the flip rate's interval."""
        return None if self.flip_ci95 is None else self.flip_ci95[0]

    def shown_above(self, max_flip: float) -> bool:
        """Whether the flip rate is shown to exceed `max_flip`: its interval's lower bound
        lies above it."""
        return self.lower is not None and self.lower > max_flip


class CriterionProbes(FrozenModel):
    """The probes of one judged criterion, with the digests of the prompts that graded them
    (as `calibrate` gives them: a task's prompt under its name, a rubric file under its
    path, a rubric criterion as `criterion:<name>`)."""

    prompt_sha256: dict[str, str]
    probes: dict[str, ProbeFigures]

    def biases(self, max_flip: float) -> list[str]:
        """The invariance probes whose flip rate is shown above `max_flip`."""
        return [
            name
            for name, figures in self.probes.items()
            if figures.kind == "invariance" and figures.shown_above(max_flip)
        ]

    def insensitive(self, max_flip: float) -> list[str]:
        """The sensitivity probes with items that flipped less often than 1 − `max_flip`."""
        return [
            name
            for name, figures in self.probes.items()
            if figures.kind == "sensitivity"
            and figures.flip_rate is not None
            and figures.flip_rate < 1 - max_flip
        ]

    def verdict_line(self, max_flip: float) -> str:
        """What the probes say of this criterion, in one line: the biases shown above
        `max_flip`, and how sensitive the judge is (the line under `probe-judge`'s table,
        and the viewer's)."""
        biases = self.biases(max_flip)
        if biases:
            shown = ", ".join(
                f"{name} (at least {_percent(self.probes[name].lower)} of items flip)"
                for name in biases
            )
            said = f"bias shown: {shown}"
        else:
            said = f"no bias shown above {_percent(max_flip)}"
        sensitivity = self.probes.get("counterfactual")
        if sensitivity is None:
            return f"{said}; sensitivity not probed (no failing reply is known for this kind)"
        if sensitivity.flip_rate is None:
            return f"{said}; sensitivity not measured (the judge passed no probed item)"
        counted = f"{sensitivity.flipped} of {sensitivity.items}"
        if sensitivity.flipped == 0:
            none = f"a failing reply flipped none of {sensitivity.items}"
            return f"{said}; not sensitive at all: {none}"
        if sensitivity.flip_rate < 1 - max_flip:
            return f"{said}; partly sensitive: a failing reply flipped only {counted}"
        return f"{said}; sensitive: a failing reply flipped {counted}"


class ProbeReport(FrozenModel):
    """Every probed criterion's figures, and what the judge did: the calls it made to the
    model and the answers its cache gave (None when the judge does not count them)."""

    criteria: dict[str, CriterionProbes]
    judge_calls: int | None
    cache_hits: int | None

    def gate_failures(self, max_flip: float) -> dict[str, str]:
        """Why each criterion fails `--max-flip`: an invariance probe's flip rate shown
        above `max_flip`, or a sensitivity probe flipping less often than 1 − `max_flip`."""
        failures: dict[str, str] = {}
        for name, criterion in self.criteria.items():
            reasons = [
                f"{probe} flips {_percent(criterion.probes[probe].lower)} or more"
                for probe in criterion.biases(max_flip)
            ]
            reasons += [
                f"{probe} flips only {_percent(criterion.probes[probe].flip_rate)}"
                for probe in criterion.insensitive(max_flip)
            ]
            if reasons:
                failures[name] = ", ".join(reasons)
        return failures

    @property
    def probed(self) -> int:
        """The items with a verdict on both sides, over every criterion and probe."""
        return sum(f.items for c in self.criteria.values() for f in c.probes.values())

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"
