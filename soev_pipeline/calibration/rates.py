"""The judge's pass rates over a run's attempts, per judged criterion and per kind.

These are the q of the corrected rates (docs/statistics.md#the-corrected-rate): for each
judged criterion, the share of its verdicts that passed, among those that passed, failed or
erred (an error is the judge's fail here as in the labels' figures; not applicable counts
nowhere). Attempts that did not run (docs/statistics.md#attempts-that-did-not-run: no
connection, HTTP 429 or 5xx, interrupted) are left out: no person labels an answer that was
never given. Test cases count, as in every aggregate. Counts are kept per case, the unit of
the run's statistics.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.grading import iter_graded
from soev_pipeline.run.unrun import read_ledger

from .corrected import JudgedRate, judged_rate
from .items import criterion_name
from .labels import is_judged

CaseCounts = dict[str, list[int]]
"""case id → [passed, counted]."""


@dataclass
class RunRates:
    """The judged verdicts of one scoring, counted per case: by criterion name and by kind."""

    by_criterion: dict[str, CaseCounts] = field(default_factory=lambda: defaultdict(dict))
    by_kind: dict[str, CaseCounts] = field(default_factory=lambda: defaultdict(dict))

    def criterion(self, name: str) -> JudgedRate:
        return _rate(self.by_criterion.get(name, {}))

    def kind(self, kind: str) -> JudgedRate:
        return _rate(self.by_kind.get(kind, {}))


def _rate(counts: CaseCounts) -> JudgedRate:
    return judged_rate([(passed, counted) for passed, counted in counts.values()])


def _add(counts: CaseCounts, case_id: str, passed: bool) -> None:
    tally = counts.setdefault(case_id, [0, 0])
    tally[0] += passed
    tally[1] += 1


def run_rates(archive: RunArchive, scoring_dir: Path) -> RunRates:
    """Count the judged verdicts of `scoring_dir`, a scoring of `archive`'s run.

    Raises:
        ProjectError: the manifest, the evidence or a line of the verdicts does not read.
    """
    ledger = read_ledger(archive, archive.manifest())
    rates = RunRates()
    for graded in iter_graded(scoring_dir):
        if (graded.case_id, graded.attempt) in ledger.unrun:
            continue
        seen: Counter[str] = Counter()
        for verdict in graded.verdicts:
            nth = seen[verdict.kind]
            seen[verdict.kind] += 1
            if not is_judged(verdict) or verdict.status == "not_applicable":
                continue
            passed = verdict.status == "pass"
            _add(rates.by_criterion[criterion_name(verdict.kind, nth)], graded.case_id, passed)
            _add(rates.by_kind[verdict.kind], graded.case_id, passed)
    return rates
