"""What decided a case: the root causes, the verdicts that counted, and those that did not.

A case page opens with *What failed*. Three things are told apart there:
- a root cause, told once: an attempt that got no reply (one HTTP 404) takes down every
  criterion that needed the reply, and those criteria are a count beside the cause, not a
  red chip each;
- the verdicts that decided the result, by the rule of scoring (`run.scoring.can_fail`):
  an error, a failing gate, a failing criterion with weight;
- the failing verdicts of criteria with weight 0 that are no gate: reported, never counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from soev_pipeline.run.scoring import can_fail

from .attempts import AttemptView, VerdictRow
from .i18n import term

FAILING = ("fail", "error")


@dataclass(frozen=True, slots=True)
class RootCause:
    """Why some attempts got no reply, and how many criteria that took down."""

    cause: str
    attempts: tuple[int, ...]
    criteria: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FailedCriterion:
    """A criterion's failing verdicts of one sort, over the attempts that had a reply:
    `statuses` as `fail ×2, error ×1`."""

    name: str
    gate: bool
    weight: float
    statuses: str


@dataclass(frozen=True, slots=True)
class WhatFailed:
    causes: tuple[RootCause, ...]
    decided: tuple[FailedCriterion, ...]
    """The verdicts that failed their attempts: errors, failing gates, weighted fails."""
    uncounted: tuple[FailedCriterion, ...]
    """The fails of criteria with weight 0 that are no gate."""

    def __bool__(self) -> bool:
        return bool(self.causes or self.decided or self.uncounted)


def _statuses(counts: Counter[str]) -> str:
    return ", ".join(f"{term(status)} ×{counts[status]}" for status in FAILING if counts[status])


def what_failed(rows: Sequence[VerdictRow], attempts: Sequence[AttemptView]) -> WhatFailed:
    """Sort the failing verdicts of a case into root causes, deciding and uncounted ones.

    `attempts` are the case's attempts; a failing verdict of an attempt with a `cause`
    (no reply) is counted under that cause, whatever its criterion, since nothing could be
    graded without the reply.
    """
    cause_of = {view.attempt: view.cause for view in attempts if view.cause is not None}
    taken: dict[str, dict[int, None]] = {}
    downed: dict[str, dict[str, None]] = {}
    decided: list[FailedCriterion] = []
    uncounted: list[FailedCriterion] = []
    for row in rows:
        counting: Counter[str] = Counter()
        ignored: Counter[str] = Counter()
        for cell in row.cells:
            if cell is None or cell.status not in FAILING:
                continue
            cause = cause_of.get(cell.attempt)
            if cause is not None:
                taken.setdefault(cause, {})[cell.attempt] = None
                downed.setdefault(cause, {})[row.name] = None
            elif can_fail(cell.status, weight=row.weight, gate=row.gate):
                counting[cell.status] += 1
            else:
                ignored[cell.status] += 1
        for counts, into in ((counting, decided), (ignored, uncounted)):
            if counts:
                into.append(FailedCriterion(row.name, row.gate, row.weight, _statuses(counts)))
    causes = tuple(
        RootCause(cause, tuple(sorted(taken[cause])), tuple(downed[cause])) for cause in taken
    )
    return WhatFailed(causes, tuple(decided), tuple(uncounted))
