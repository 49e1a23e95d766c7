"""One unit of the corpus lookup (docs/project.md#the-corpus-lookup)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CorpusUnit:
    """One unit of the corpus: an id such as `BWBR0005537/artikel-6:7`, its text and labels."""

    id: str
    text: str
    law: str | None = None
    aliases: tuple[str, ...] = ()
    article: str | None = None
