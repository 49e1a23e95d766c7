"""Source ids: paths of segments such as `BWBR0005537/artikel-6:7/lid-1`
(docs/project.md#source-ids).

A source id names a unit of law: the regulation first, then the levels below it. The
citation criteria compare the ids that a reply cites with the sources of a case, either
exactly or hierarchically (a cited lid meets a requirement of its article).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Literal

Match = Literal["hierarchical", "exact"]
"""How a cited id meets a source: `hierarchical` (the source is the id or above it) or `exact`."""


@functools.lru_cache(maxsize=8192)
def segments(source_id: str) -> tuple[str, ...]:
    """Split `source_id` into its segments.

    Surrounding whitespace and empty segments are dropped, so `BWBR1/artikel-2/` and
    `BWBR1/artikel-2` have the same segments: a stray slash is not a different unit.
    Remembered: grading compares the same cited ids and sources for attempt after attempt.
    """
    return tuple(part for part in (piece.strip() for piece in source_id.split("/")) if part)


def canonical(source_id: str) -> str:
    """The id rebuilt from its segments: what the criteria compare and report."""
    return "/".join(segments(source_id))


def matches(cited: str, source: str, *, match: Match = "hierarchical") -> bool:
    """Whether the cited id `cited` meets the source `source`.

    `hierarchical`: the segments of `source` are a prefix of the segments of `cited`, so
    citing `.../artikel-6:7/lid-1` meets `.../artikel-6:7`, while `.../artikel-6:70` does
    not (segments are compared whole, never as text prefixes). `exact`: the same segments.
    An id without segments matches nothing.
    """
    cited_parts, source_parts = segments(cited), segments(source)
    if not cited_parts or not source_parts:
        return False
    if match == "exact":
        return cited_parts == source_parts
    return cited_parts[: len(source_parts)] == source_parts


def matching(cited: str, sources: Iterable[str], *, match: Match = "hierarchical") -> list[str]:
    """The sources of `sources` that `cited` meets, in their order."""
    return [source for source in sources if matches(cited, source, match=match)]


def article_of(source_id: str) -> str:
    """The article of `source_id`: its prefix up to the first segment starting with `artikel`.

    `BWBR0005537/artikel-6:7/lid-1` gives `BWBR0005537/artikel-6:7` (the prefix is compared
    case-insensitively). An id without such a segment (a whole regulation, a chapter) is
    its own article.
    """
    parts = segments(source_id)
    for index, part in enumerate(parts):
        if part.casefold().startswith("artikel"):
            return "/".join(parts[: index + 1])
    return "/".join(parts)


def unique(ids: Iterable[str]) -> list[str]:
    """The canonical forms of `ids` without repeats, in first-seen order; empty ids are dropped."""
    seen: dict[str, None] = {}
    for source_id in ids:
        key = canonical(source_id)
        if key:
            seen.setdefault(key, None)
    return list(seen)
