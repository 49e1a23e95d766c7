"""The units of a corpus, held in a few shared containers instead of an object each.

Grading workers are forked from the process that loaded the corpus and share its memory
until they write to it; and reading a Python object writes to it (its reference count),
which copies the page it lies on. A worker that checks quotes against tens of thousands
of unit texts, each its own string, copied tens of MB of them (36 MB a worker more at
50,000 units than at 5,000). Here the texts are one UTF-8 buffer, read by slicing it,
and a law name, an alias list or an article label that many units share is one object.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

from .unit import CorpusUnit


class UnitTexts(Sequence[str]):
    """The texts of the units, in unit order; each read is decoded from the buffer."""

    def __init__(self, data: bytearray, ends: array[int]) -> None:
        self._data = data
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[each] for each in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._ends)
        end = self._ends[index]  # IndexError past the end, as a sequence must
        start = self._ends[index - 1] if index > 0 else 0
        return self._data[start:end].decode()

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield self._data[start:end].decode()
            start = end


class UnitStore(Mapping[str, CorpusUnit]):
    """The units of a corpus by id, in the order they came; a unit read is made anew.

    Raises:
        ValueError: two units have the same id.
    """

    def __init__(self, units: Iterable[CorpusUnit]) -> None:
        self._positions: dict[str, int] = {}
        self.ids: list[str] = []
        """The id of each unit, in unit order."""
        data, ends = bytearray(), array("q")
        self._laws: list[str | None] = []
        self._aliases: list[tuple[str, ...]] = []
        self._articles: list[str | None] = []
        # one object for each distinct name, label and list of aliases
        names: dict[str | None, str | None] = {}
        alias_lists: dict[tuple[str, ...], tuple[str, ...]] = {}
        for unit in units:
            if unit.id in self._positions:
                raise ValueError(f"duplicate unit id {unit.id!r}")
            self._positions[unit.id] = len(self.ids)
            self.ids.append(unit.id)
            data += unit.text.encode()
            ends.append(len(data))
            self._laws.append(names.setdefault(unit.law, unit.law))
            self._aliases.append(alias_lists.setdefault(unit.aliases, unit.aliases))
            self._articles.append(names.setdefault(unit.article, unit.article))
        self.texts = UnitTexts(data, ends)
        """The text of each unit, in unit order."""

    def __getitem__(self, unit_id: str) -> CorpusUnit:
        return self.unit(self._positions[unit_id])

    def __contains__(self, unit_id: object) -> bool:
        return unit_id in self._positions

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def unit(self, position: int) -> CorpusUnit:
        """The unit at `position`, in unit order."""
        return CorpusUnit(
            self.ids[position],
            self.texts[position],
            self._laws[position],
            self._aliases[position],
            self._articles[position],
        )

    def labels(self) -> Iterator[CorpusUnit]:
        """Every unit with its id, law, aliases and article but an empty text: what an
        index of labels reads, without decoding the texts."""
        fields = zip(self.ids, self._laws, self._aliases, self._articles, strict=True)
        for unit_id, law, aliases, article in fields:
            yield CorpusUnit(unit_id, "", law, aliases, article)
