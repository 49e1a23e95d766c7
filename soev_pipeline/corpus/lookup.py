"""Read a corpus lookup file: JSON Lines, one unit a line."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from soev_pipeline.core.errors import ProjectError

from .index import QuoteIndex
from .mentions import MentionIndex
from .store import UnitStore
from .unit import CorpusUnit

T = TypeVar("T")


@dataclass(eq=False)
class CorpusLookup:
    """The units of a corpus by id, with indexes that the corpus criteria build once.

    Indexes are built on first use and shared by every attempt a command grades; build
    them up front with `warm()` when the cost should not land on the first attempt.
    The units are held compactly (`UnitStore`), so that forked grading workers share them.
    """

    units: UnitStore
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def from_units(cls, units: Iterable[CorpusUnit]) -> CorpusLookup:
        """The lookup of `units`. Raises ValueError when two have the same id."""
        return cls(UnitStore(units))

    def __contains__(self, unit_id: object) -> bool:
        return unit_id in self.units

    def __len__(self) -> int:
        return len(self.units)

    def __iter__(self) -> Iterator[CorpusUnit]:
        return iter(self.units.values())

    def get(self, unit_id: str) -> CorpusUnit | None:
        return self.units.get(unit_id)

    def cached(self, name: str, build: Callable[[], T]) -> T:
        """Return the index called `name`, building it with `build()` the first time.

        The lookup keeps the index for as long as it lives, so every attempt that a
        command grades shares it; a lock keeps two threads from building it twice.
        Indexes stay in memory: they are not pickled with the lookup.
        """
        with self._lock:
            if name not in self._cache:
                self._cache[name] = build()
            return self._cache[name]  # type: ignore[no-any-return]

    def quote_index(self) -> QuoteIndex:
        """The index that finds the unit holding a quote (`citations.quotes_verbatim`)."""
        return self.cached("quotes", lambda: QuoteIndex.build(self.units.ids, self.units.texts))

    def mention_index(self) -> MentionIndex:
        """The (law, article) index of `citations.mentions_in_corpus`."""
        return self.cached("mentions", lambda: MentionIndex.build(self.units.labels()))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the units only: an index holds hashes of this process, so it is rebuilt."""
        return {"units": self.units}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.units = state["units"]
        self._cache = {}
        self._lock = threading.RLock()

    def warm(self) -> None:
        """Build every index now, so that the cost lands before grading, not on an attempt."""
        self.quote_index()
        self.mention_index()

    def drop_indexes(self) -> None:
        """Let go of the indexes (tens of MB for a large corpus); the next use builds them anew."""
        with self._lock:
            self._cache.clear()


_FIELDS = {"id", "text", "law", "aliases", "article"}


def _unit(raw: Any, where: Callable[[], str]) -> CorpusUnit:
    """The unit of one parsed line; `where()` names the line in an error.

    A well-formed unit (the common case) is taken at once; anything else goes through
    `_checked_unit`, which accepts what it accepts and says what is wrong otherwise.
    """
    if type(raw) is dict and raw.keys() <= _FIELDS:
        unit_id, text = raw.get("id"), raw.get("text")
        law, article, aliases = raw.get("law"), raw.get("article"), raw.get("aliases")
        if (
            type(unit_id) is str
            and unit_id.strip()
            and type(text) is str
            and (law is None or type(law) is str)
            and (article is None or type(article) is str)
            and (
                aliases is None or (type(aliases) is list and all(type(a) is str for a in aliases))
            )
        ):
            return CorpusUnit(unit_id, text, law, tuple(aliases) if aliases else (), article)
    return _checked_unit(raw, where())


def _checked_unit(raw: Any, where: str) -> CorpusUnit:
    if not isinstance(raw, dict):
        raise ProjectError(f"{where}: a corpus unit must be a JSON object")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        allowed = ", ".join(sorted(_FIELDS))
        raise ProjectError(f"{where}: unknown field {unknown[0]!r} (allowed: {allowed})")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise ProjectError(f"{where}: field 'id' must be a non-empty string")
    if not isinstance(raw.get("text"), str):
        raise ProjectError(f"{where}: field 'text' must be a string")
    for name in ("law", "article"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            raise ProjectError(f"{where}: field {name!r} must be a string")
    aliases = raw.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ProjectError(f"{where}: field 'aliases' must be a list of strings")
    return CorpusUnit(
        id=raw["id"],
        text=raw["text"],
        law=raw.get("law"),
        aliases=tuple(aliases),
        article=raw.get("article"),
    )


def load_corpus(path: Path) -> CorpusLookup:
    """Read the corpus lookup at `path`, a line at a time.

    Raises:
        ProjectError: a line is not a unit, or two units have the same id; the message
            names the file and the line.
        OSError: the file cannot be read.
    """
    return CorpusLookup(UnitStore(_read_units(path)))


def _read_units(path: Path) -> Iterator[CorpusUnit]:
    """The units of the corpus file at `path`, each checked as it is read."""
    seen: set[str] = set()
    offset = 0
    number = 0

    def where() -> str:  # made only for an error: a large corpus has many lines
        return f"{path}: line {number}"

    with path.open("rb") as lines:
        for number, data in enumerate(lines, start=1):
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProjectError(
                    f"{where()}: byte {offset + exc.start}: not UTF-8 text ({exc.reason})"
                ) from None
            offset += len(data)
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ProjectError(f"{where()}: not valid JSON ({exc.msg})") from None
            unit = _unit(raw, where)
            if unit.id in seen:
                raise ProjectError(f"{where()}: duplicate unit id {unit.id!r}")
            seen.add(unit.id)
            yield unit
