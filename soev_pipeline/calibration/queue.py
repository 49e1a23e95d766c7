"""The labelling queue: which judged verdict a reviewer labels next
(docs/view.md#the-labelling-queue).

A label helps calibration only where it narrows what `calibrate` reports. Per judged
criterion, `calibrate` measures two recalls: of the replies people pass, the share the
judge passes; of those people fail, the share it fails. Before a person labels a reply, the
judge's own verdict is the best guess of which of the two it feeds, so the candidates are
stratified by criterion and by the judge's verdict (pass, or fail and error: an error is
the judge's fail, as everywhere in calibration). The stratum whose recall has the widest
interval now gets the next item, so both recalls of every criterion get items, and the
one that is least known first.

Only labels that count are asked for: a verdict that calibration would leave out (not the
judge's, not applicable, of a reply that is not there, of a test case, of a kind that needs
the variants' replies) is no candidate (`why_not_labelled`). An item someone decided is not
asked again (a second label measures the people, not the judge); an item that people split
evenly on, a tie, counts against the judge for nobody until a third person decides it, so
ties come first, to a reviewer who has not labelled them yet.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from soev_pipeline.core.models import Case
from soev_pipeline.core.stats import wilson

from .agreement import NARROW_RECALL, WIDE_RECALL, items_for
from .items import Item, ItemKey, criterion_name
from .judging import NEEDS_VARIANTS
from .labels import criterion_of
from .service import DEFAULT_MIN_ITEMS

UNKNOWN_SHARE = 0.5
"""The recall assumed where the judge's verdict on no labelled reply is known: the share
whose interval is widest."""


Unlabelled = Literal[
    "not_dev", "not_judged", "not_applicable", "needs_variants", "no_reply", "no_criterion"
]
"""Why a verdict takes no label, as a code the viewer words (in the reader's language):
the case is no dev case now; the verdict is not the judge's; the criterion does not apply;
the kind compares the variants' replies, which a label does not hold; the attempt has no
final reply; the case no longer has the criterion."""


def why_not_labelled(
    case: Case | None, kind: str, nth: int, status: str, *, judged: bool, has_reply: bool
) -> Unlabelled | None:
    """Why a label of this verdict would count nowhere in calibration, or None when it counts."""
    if case is None or case.split != "dev":
        return "not_dev"
    if not judged:
        return "not_judged"
    if status == "not_applicable":
        return "not_applicable"
    if kind in NEEDS_VARIANTS:
        return "needs_variants"
    if not has_reply:
        return "no_reply"
    if criterion_of(case, kind, nth) is None:
        return "no_criterion"
    return None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A judged verdict of one attempt that a person may label, and the judge's verdict."""

    case_id: str
    attempt: int
    reply_sha256: str
    kind: str
    nth: int
    judge_passed: bool
    """The judge passed it; False for its fail and its error."""
    key: ItemKey = field(init=False, compare=False)
    """(case id, reply SHA-256, kind, nth): the item it is a verdict of."""
    name: str = field(init=False, compare=False)
    """The criterion's name (`kind`, or `kind#nth`)."""
    order: str = field(init=False, compare=False)
    """A fixed order within a stratum that spreads the items over the cases: a hash of the
    item. The three are made once with the candidate: a queue is walked at every request."""

    def __post_init__(self) -> None:
        key = (self.case_id, self.reply_sha256, self.kind, self.nth)
        digest = hashlib.sha256("\0".join(map(str, key)).encode("utf-8")).hexdigest()
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "name", criterion_name(self.kind, self.nth))
        object.__setattr__(self, "order", digest)

    @property
    def item_id(self) -> str:
        """A short id of the item, for an address (the queue's skip list)."""
        return self.order[:12]


@dataclass(frozen=True, slots=True)
class Stratum:
    """The candidates of one criterion that the judge passed (or failed), and the recall
    they feed: its interval's width now, on `labelled` items of that human verdict."""

    criterion: str
    judge_passed: bool
    width: float
    labelled: int
    waiting: int


@dataclass(frozen=True, slots=True)
class Progress:
    """A criterion's items that people decided, and how many `calibrate` asks for.

    `target` is at least `DEFAULT_MIN_ITEMS` (the fewest items `calibrate --min-kappa`
    accepts), and more where `calibrate` calls a recall's interval too wide: the number
    of items of that human verdict it names to narrow it to ±`NARROW_RECALL`.
    """

    criterion: str
    items: int
    target: int


Why = Literal["tie", "widest", "done"]
"""Why the queue offers its item: people split on it, its stratum's interval is the widest,
or nothing is left (`Plan.next` is None)."""


@dataclass(frozen=True)
class Plan:
    """What the queue offers a reviewer: the next candidate (None when none is left), why
    it was chosen, its labels so far, its stratum, and the figures it was chosen by."""

    next: Candidate | None
    why: Why
    stratum: Stratum | None
    labels: Item | None
    strata: tuple[Stratum, ...]
    progress: Mapping[str, Progress]


@dataclass
class _Recall:
    labelled: int = 0
    known: int = 0
    hits: int = 0

    @property
    def share(self) -> float:
        return self.hits / self.known if self.known else UNKNOWN_SHARE

    def width(self) -> float:
        """The width of the recall's Wilson interval, as `calibrate` reports it; 1 without
        an item."""
        if self.labelled == 0:
            return 1.0
        low, high = wilson(self.share, self.labelled)
        return high - low

    def needed(self) -> int:
        """The items `calibrate` names for this recall: as many as it has while its
        interval is no wider than `WIDE_RECALL`, else enough for ±`NARROW_RECALL`."""
        if self.labelled == 0 or self.width() <= WIDE_RECALL:
            return self.labelled
        return max(self.labelled, items_for(self.share, NARROW_RECALL))


def _recalls(
    items: Iterable[Item], judge: Mapping[ItemKey, bool]
) -> dict[tuple[str, bool], _Recall]:
    """Per (criterion, human verdict): the decided items, and the judge's hits where this
    run's verdict on the labelled reply is known."""
    found: dict[tuple[str, bool], _Recall] = defaultdict(_Recall)
    for item in items:
        passed = item.passed
        if passed is None:
            continue
        figures = found[(item.name, passed)]
        figures.labelled += 1
        verdict = judge.get((item.case_id, item.labels[0].label.reply_sha256, item.kind, item.nth))
        if verdict is not None:
            figures.known += 1
            figures.hits += verdict == passed
    return found


class LabelQueue:
    """A run's candidates arranged once: one per item, by stratum, each stratum in the
    fixed order of `Candidate.order`. `plan` then costs a walk over the labels, not over
    the run: a 20,000-attempt run asks for its next item in milliseconds."""

    def __init__(self, candidates: Iterable[Candidate]) -> None:
        unique: dict[ItemKey, Candidate] = {}
        for candidate in candidates:
            unique.setdefault(candidate.key, candidate)
        self._items = unique
        self._judge = {key: candidate.judge_passed for key, candidate in unique.items()}
        self._ids = {candidate.item_id: candidate for candidate in unique.values()}
        strata: dict[tuple[str, bool], list[Candidate]] = defaultdict(list)
        for candidate in unique.values():
            strata[(candidate.name, candidate.judge_passed)].append(candidate)
        self._strata = {key: sorted(found, key=lambda c: c.order) for key, found in strata.items()}

    def plan(
        self, items: Iterable[Item], reviewer: str, skipped: frozenset[str] = frozenset()
    ) -> Plan:
        """The next item for `reviewer`, given the labels so far (`items`, gathered),
        leaving out the item ids of `skipped`; see `next_to_label`."""
        labelled = {(i.case_id, i.labels[0].label.reply_sha256, i.kind, i.nth): i for i in items}
        recalls = _recalls(labelled.values(), self._judge)
        reviewer = reviewer.strip()
        ties: list[Candidate] = []
        closed: Counter[tuple[str, bool]] = Counter()
        for key, item in labelled.items():
            candidate = self._items.get(key)
            if candidate is None:
                continue
            closed[(candidate.name, candidate.judge_passed)] += 1
            if candidate.item_id in skipped:
                continue
            if item.passed is None and all(read.label.by != reviewer for read in item.labels):
                ties.append(candidate)
        for item_id in skipped:
            candidate = self._ids.get(item_id)
            if candidate is not None and candidate.key not in labelled:
                closed[(candidate.name, candidate.judge_passed)] += 1
        names = sorted({name for name, _ in self._strata} | {name for name, _ in recalls})
        strata = tuple(
            Stratum(
                name,
                judged,
                recalls[(name, judged)].width(),
                recalls[(name, judged)].labelled,
                len(self._strata.get((name, judged), ())) - closed[(name, judged)],
            )
            for name in names
            for judged in (False, True)
        )
        progress = {
            name: Progress(
                name,
                recalls[(name, True)].labelled + recalls[(name, False)].labelled,
                max(
                    DEFAULT_MIN_ITEMS,
                    recalls[(name, True)].needed() + recalls[(name, False)].needed(),
                ),
            )
            for name in names
        }
        by_key = {(s.criterion, s.judge_passed): s for s in strata}
        if ties:
            chosen = min(ties, key=lambda c: (c.name, c.order))
            stratum = by_key[(chosen.name, chosen.judge_passed)]
            return Plan(chosen, "tie", stratum, labelled.get(chosen.key), strata, progress)
        waiting = [stratum for stratum in strata if stratum.waiting]
        if not waiting:
            return Plan(None, "done", None, None, strata, progress)
        top = min(waiting, key=lambda s: (-s.width, s.labelled, s.judge_passed, s.criterion))
        chosen = next(
            candidate
            for candidate in self._strata[(top.criterion, top.judge_passed)]
            if candidate.key not in labelled and candidate.item_id not in skipped
        )
        return Plan(chosen, "widest", top, None, strata, progress)


def next_to_label(
    candidates: Iterable[Candidate],
    items: Iterable[Item],
    reviewer: str,
    skipped: frozenset[str] = frozenset(),
) -> Plan:
    """The next item for `reviewer` among `candidates` (a run's), given the labels so far
    (`items`, gathered), leaving out the item ids of `skipped`.

    Order: first a tie that `reviewer` has not labelled; then, of the strata with an item
    left, the one whose recall has the widest interval (on a tie of widths: fewer labelled
    items, then the judge's fails first, then the criterion's name), its first item in the
    fixed order of `Candidate.order`. A candidate of an item that `reviewer` labelled, or
    that someone decided, is never offered. To ask again and again of one run, arrange its
    candidates once in a `LabelQueue`.
    """
    return LabelQueue(candidates).plan(items, reviewer, skipped)
