"""Labelled items: the labels of one reply's criterion, gathered, and what the people decided.

An item is one judged criterion of one reply of one case: (case, reply, kind, nth). Several
people may label it; each person counts once (their latest label, by its time and then by
its place in the files, so a correction replaces the first try), and the majority of the
people decides the item. A tie decides nothing: the item counts in the people's agreement
with each other, but not against the judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .labels import ReadLabel

ItemKey = tuple[str, str, str, int]
"""(case id, reply SHA-256, kind, nth)."""


def criterion_name(kind: str, nth: int) -> str:
    """The name a criterion is reported under: `kind`, or `kind#nth` for nth > 0."""
    return kind if nth == 0 else f"{kind}#{nth}"


@dataclass(frozen=True)
class Item:
    """A labelled item: its labels, one per person, in file order.

    Attributes:
        passed: the people's majority verdict; None on a tie.
        label: the majority of the labels the people gave (None without one, or on a tie).
    """

    case_id: str
    reply: str
    kind: str
    nth: int
    labels: tuple[ReadLabel, ...]

    @property
    def name(self) -> str:
        return criterion_name(self.kind, self.nth)

    @property
    def verdicts(self) -> tuple[bool, ...]:
        return tuple(read.label.passed for read in self.labels)

    @property
    def passed(self) -> bool | None:
        yes = sum(self.verdicts)
        no = len(self.verdicts) - yes
        return None if yes == no else yes > no

    @property
    def label(self) -> str | None:
        counts = Counter(read.label.label for read in self.labels if read.label.label is not None)
        ranked = counts.most_common(2)
        if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
            return None
        return ranked[0][0]


def gather(labels: Iterable[ReadLabel]) -> list[Item]:
    """The items of `labels`, in the order their first label was read.

    A person's later label of an item replaces their earlier one: the later by `at`, and
    of two at the same time the one further down the files.
    """
    people: dict[ItemKey, dict[str, ReadLabel]] = {}
    for read in labels:
        line = read.label
        key = (line.case_id, line.reply_sha256, line.kind, line.nth)
        by = people.setdefault(key, {})
        earlier = by.get(line.by)
        if earlier is None or earlier.label.at <= line.at:
            by[line.by] = read
    items = []
    for (case_id, _, kind, nth), by in people.items():
        kept = tuple(sorted(by.values(), key=lambda read: (str(read.file), read.line)))
        items.append(Item(case_id, kept[0].label.reply, kind, nth, kept))
    return items
