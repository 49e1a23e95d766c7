"""Tests of the corpus lookup: reading the JSON Lines file, and indexes built once."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.corpus import CorpusLookup, CorpusUnit, load_corpus
from soev_pipeline.corpus.index import QuoteIndex
from soev_pipeline.corpus.mentions import MentionIndex

UNIT = {
    "id": "BWBR0005537/artikel-6:7",
    "text": "De termijn bedraagt zes weken.",
    "law": "Algemene wet bestuursrecht",
    "aliases": ["Awb"],
    "article": "6:7",
}


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_corpus_reads_units(tmp_path: Path) -> None:
    other = {"id": "BWBR0005537/artikel-6:8", "text": "Daarna."}
    corpus = load_corpus(write(tmp_path, json.dumps(UNIT), "", json.dumps(other)))
    assert len(corpus) == 2
    assert corpus.get("BWBR0005537/artikel-6:7") == CorpusUnit(
        "BWBR0005537/artikel-6:7",
        "De termijn bedraagt zes weken.",
        "Algemene wet bestuursrecht",
        ("Awb",),
        "6:7",
    )
    assert "BWBR0005537/artikel-6:8" in corpus
    assert [unit.id for unit in corpus] == [UNIT["id"], other["id"]]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('["a list"]', "line 2: a corpus unit must be a JSON object"),
        ('{"text": "zonder id"}', "line 2: field 'id' must be a non-empty string"),
        ('{"id": "X"}', "line 2: field 'text' must be a string"),
        ('{"id": "X", "text": "t", "wet": "Awb"}', "line 2: unknown field 'wet'"),
        ('{"id": "X", "text": "t", "aliases": "Awb"}', "line 2: field 'aliases'"),
        ('{"id": "X", "text": "t", "article": 7}', "line 2: field 'article'"),
        ('{"id": " ", "text": "t"}', "line 2: field 'id' must be a non-empty string"),
        ('{"id": "X", "text": 7}', "line 2: field 'text' must be a string"),
        ('{"id": "X", "text": "t", "law": ["Awb"]}', "line 2: field 'law' must be a string"),
        ('{"id": "X", "text": "t", "aliases": ["Awb", 7]}', "line 2: field 'aliases'"),
        (json.dumps(UNIT), "line 2: duplicate unit id 'BWBR0005537/artikel-6:7'"),
    ],
)
def test_a_bad_line_is_a_project_error_naming_it(tmp_path: Path, bad: str, message: str) -> None:
    path = write(tmp_path, json.dumps(UNIT), bad)
    with pytest.raises(ProjectError) as raised:
        load_corpus(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_a_line_that_is_not_utf8_is_named_with_its_byte(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    first = json.dumps(UNIT).encode() + b"\n"
    path.write_bytes(first + b'{"id": "X", "text": "caf\xe9"}\n')
    with pytest.raises(ProjectError) as raised:
        load_corpus(path)
    at = len(first) + len(b'{"id": "X", "text": "caf')
    assert str(raised.value) == (
        f"{path}: line 2: byte {at}: not UTF-8 text (invalid continuation byte)"
    )


def test_a_byte_order_mark_and_empty_optional_fields_are_accepted(tmp_path: Path) -> None:
    nulls = {"id": "X", "text": "t", "law": None, "aliases": None, "article": None}
    path = tmp_path / "corpus.jsonl"
    path.write_text("\ufeff" + json.dumps(UNIT) + "\r\n\n" + json.dumps(nulls), encoding="utf-8")
    corpus = load_corpus(path)
    assert corpus.get("X") == CorpusUnit("X", "t")
    assert corpus.get(UNIT["id"]) == CorpusUnit(
        UNIT["id"], UNIT["text"], UNIT["law"], ("Awb",), "6:7"
    )


def test_from_units_refuses_duplicate_ids() -> None:
    unit = CorpusUnit("X", "t")
    with pytest.raises(ValueError, match="duplicate unit id 'X'"):
        CorpusLookup.from_units([unit, unit])


def test_cached_builds_once() -> None:
    corpus = CorpusLookup.from_units([CorpusUnit("X", "t")])
    builds: list[int] = []

    def build() -> list[int]:
        builds.append(1)
        return builds

    assert corpus.cached("n", build) is corpus.cached("n", build)
    assert builds == [1]


def test_warm_builds_both_indexes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = CorpusLookup.from_units([CorpusUnit("X/artikel-1", "een twee", law="Wet A")])
    counts = {"quotes": 0, "mentions": 0}
    quote_build, mention_build = QuoteIndex.build, MentionIndex.build

    def quotes(ids: list[str], texts: list[str]) -> QuoteIndex:
        counts["quotes"] += 1
        return quote_build(ids, texts)

    def mentions(units: list[CorpusUnit]) -> MentionIndex:
        counts["mentions"] += 1
        return mention_build(units)

    monkeypatch.setattr(QuoteIndex, "build", quotes)
    monkeypatch.setattr(MentionIndex, "build", mentions)
    corpus.warm()
    assert counts == {"quotes": 1, "mentions": 1}
    assert corpus.quote_index().find("een twee") == "X/artikel-1"
    assert corpus.mention_index().find_mentions("artikel 1 Wet A")[0]
    corpus.warm()
    assert counts == {"quotes": 1, "mentions": 1}


def test_a_pickled_lookup_leaves_its_indexes_behind() -> None:
    """Index keys are hashes of one process; another process must build its own."""
    corpus = CorpusLookup.from_units([CorpusUnit("X/artikel-1", "een twee", law="Wet A")])
    corpus.warm()
    copy = pickle.loads(pickle.dumps(corpus))
    assert copy.units == corpus.units
    assert copy._cache == {}
    assert copy.quote_index().find("een twee") == "X/artikel-1"
    assert copy.quote_index() is not corpus.quote_index()


def test_dropped_indexes_are_built_anew_on_next_use() -> None:
    corpus = CorpusLookup.from_units([CorpusUnit("X/artikel-1", "een twee", law="Wet A")])
    corpus.warm()
    before = corpus.quote_index()
    corpus.drop_indexes()
    assert corpus._cache == {}
    assert corpus.quote_index() is not before
    assert corpus.quote_index().find("een twee") == "X/artikel-1"


def _corpus() -> CorpusLookup:
    words = [
        "de",
        "termijn",
        "voor",
        "bezwaar",
        "is",
        "zes",
        "weken",
        "na",
        "de",
        "bekendmaking",
        "van",
        "het",
        "besluit",
    ]
    return CorpusLookup.from_units(
        CorpusUnit(f"X/artikel-{n}", " ".join(words[n % 5 :] + words[: n % 5]), law="Wet A")
        for n in range(40)
    )
