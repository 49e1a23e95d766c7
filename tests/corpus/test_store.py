"""Tests of the compact unit store: every unit reads back as it was given."""

from __future__ import annotations

import pickle

import pytest

from soev_pipeline.corpus import CorpusUnit
from soev_pipeline.corpus.store import UnitStore

UNITS = [
    CorpusUnit("A/artikel-1", "De termijn is zes weken.", "Algemene wet", ("Awb",), "1"),
    CorpusUnit("A/artikel-2", "’s-Gravenhage — “zo” ½ € 5", "Algemene wet", ("Awb",), "2"),
    CorpusUnit("B", ""),
    CorpusUnit("C/artikel-1", "漢字 and emoji 🙂", None, (), None),
]


def test_every_unit_reads_back_as_given_in_order() -> None:
    store = UnitStore(UNITS)
    assert len(store) == 4
    assert list(store) == [unit.id for unit in UNITS]
    assert [store[unit.id] for unit in UNITS] == UNITS
    assert [store.unit(position) for position in range(4)] == UNITS
    assert list(store.texts) == [unit.text for unit in UNITS]
    assert "B" in store
    assert "D" not in store
    assert store.get("D") is None
    with pytest.raises(KeyError):
        store["D"]


def test_texts_is_a_sequence() -> None:
    texts = UnitStore(UNITS).texts
    assert len(texts) == 4
    assert texts[-1] == UNITS[-1].text
    assert texts[1:3] == [UNITS[1].text, ""]
    with pytest.raises(IndexError):
        texts[4]


def test_a_duplicate_id_is_refused() -> None:
    with pytest.raises(ValueError, match="duplicate unit id 'B'"):
        UnitStore([*UNITS, CorpusUnit("B", "again")])


def test_units_share_one_object_for_a_law_and_its_aliases() -> None:
    first, second = (
        CorpusUnit(f"A/{n}", "t", " ".join(["Wet", "X"]), ("".join(["W", "X"]),)) for n in (1, 2)
    )
    assert first.law is not second.law  # as each line of a corpus file gives its own
    assert first.aliases is not second.aliases
    store = UnitStore([first, second])
    assert store["A/1"].law is store["A/2"].law
    assert store["A/1"].aliases is store["A/2"].aliases


def test_labels_are_the_units_without_their_texts() -> None:
    labels = list(UnitStore(UNITS).labels())
    assert labels == [
        CorpusUnit(unit.id, "", unit.law, unit.aliases, unit.article) for unit in UNITS
    ]


def test_a_pickled_store_is_equal() -> None:
    store = UnitStore(UNITS)
    copy = pickle.loads(pickle.dumps(store))
    assert copy == store
    assert list(copy.texts) == list(store.texts)
