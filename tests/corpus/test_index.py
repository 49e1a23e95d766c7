"""Tests of the quote index: normalization, fragments, word boundaries, few candidates."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest

from soev_pipeline.corpus import CorpusLookup, CorpusUnit
from soev_pipeline.corpus import index as index_module
from soev_pipeline.corpus.index import QuoteIndex, normalize_text, quote_fragments

AWB_67 = "BWBR0005537/artikel-6:7"


def build(units: list[CorpusUnit]) -> QuoteIndex:
    return QuoteIndex.build([unit.id for unit in units], [unit.text for unit in units])


def test_normalize_text_folds_case_space_typography() -> None:
    text = "De\u00a0Termijn –\n  ’s-Gravenhage “zo” \u00adbe\u00adzwaar…"
    assert normalize_text(text) == 'de termijn - \'s-gravenhage "zo" bezwaar...'


@pytest.mark.parametrize(
    ("quote", "fragments"),
    [
        ("zes weken.", ("zes weken",)),
        ("  De termijn, ", ("de termijn",)),
        ("De termijn … zes weken", ("de termijn", "zes weken")),
        ("De termijn [...] zes weken", ("de termijn", "zes weken")),
        ("De termijn (...) zes weken...", ("de termijn", "zes weken")),
        ("...", ()),
        (" - ", ()),
    ],
)
def test_quote_fragments(quote: str, fragments: tuple[str, ...]) -> None:
    assert quote_fragments(quote) == fragments


@pytest.mark.parametrize(
    "quote",
    [
        "zes weken",
        "De termijn voor het indienen van een bezwaarschrift of beroepschrift bedraagt zes weken.",
        "de   termijn voor het\n\tindienen",
        "BEZWAARSCHRIFT OF BEROEPSCHRIFT",
        "De termijn … bedraagt zes weken",
        "termijn",
    ],
)
def test_find_holds_normalized_quotes(corpus: CorpusLookup, quote: str) -> None:
    assert corpus.quote_index().find(quote) == AWB_67


def test_find_typographic_forms(corpus: CorpusLookup) -> None:
    index = corpus.quote_index()
    unit = "BWBR0001854/artikel-1"
    assert index.find("rechtbank te 's-Gravenhage - en niet een andere - beslist hierover") == unit
    assert index.find("’s-Gravenhage — en niet") == unit


@pytest.mark.parametrize(
    "quote",
    [
        "zes wek",  # cuts a word
        "ermijn voor",  # cuts a word at the start
        "bedraagt zeven weken",  # a word the corpus has, wrongly placed
        "De termijn bedraagt zes weken",  # the words of one unit, but not its text
        "zes weken … De termijn",  # fragments out of order
        "bezwaarschrift beslist hierover",  # words of two units
        "een geheel verzonnen zin",
    ],
)
def test_find_misses_what_no_unit_holds(corpus: CorpusLookup, quote: str) -> None:
    assert corpus.quote_index().find(quote) is None


def test_find_of_a_quote_without_words_is_none(corpus: CorpusLookup) -> None:
    assert corpus.quote_index().find("…") is None


def test_empty_corpus_finds_nothing() -> None:
    index = build([])
    assert index.find("zes weken") is None
    assert index.nbytes >= 0


def test_find_checks_few_units_in_a_large_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quote is checked against a handful of candidate units, never the whole corpus."""
    rng = random.Random(3)
    words = [f"woord{n}" for n in range(3000)] + ["de", "het", "van", "een"] * 200
    units = [
        CorpusUnit(f"BWBR{n:07d}/artikel-1", " ".join(rng.choices(words, k=60)))
        for n in range(3000)
    ]
    target = units[1234]
    quote = " ".join(target.text.split()[20:30])
    index = build(units)
    calls: list[str] = []
    original = index_module.normalize_text

    def counting(text: str) -> str:
        calls.append(text)
        return original(text)

    monkeypatch.setattr(index_module, "normalize_text", counting)
    assert index.find(quote) is not None
    assert index.find("de het van een woord1 woord2 woord3 woord4 woord5") is None
    assert len(calls) < 40
    assert index.find(quote) == target.id


def test_hash_collisions_only_add_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if every word had the same hash, `find` would still be exact."""
    monkeypatch.setattr(index_module, "hash", lambda word: 7, raising=False)
    units = [CorpusUnit("a/artikel-1", "een twee drie"), CorpusUnit("b/artikel-1", "vier vijf")]
    index = build(units)
    assert index.candidates(["vier"]) == [0, 1]
    assert index.find("vier vijf") == "b/artikel-1"
    assert index.find("twee drie") == "a/artikel-1"
    assert index.find("drie vier") is None


def test_an_index_built_in_blocks_equals_one_built_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = ["de termijn is zes weken", "zes weken en de termijn", "", "de de de termijn"]
    units = [CorpusUnit(f"X/artikel-{n}", text) for n, text in enumerate(texts * 3)]
    whole = build(units)
    monkeypatch.setattr(index_module, "_BLOCK", 2)
    blocks = build(units)
    for name in ("_keys", "_starts", "_postings"):
        assert np.array_equal(getattr(whole, name), getattr(blocks, name)), name
    assert blocks.find("zes weken en de") == "X/artikel-1"
    assert build([]).find("zes") is None


def test_no_word_pair_runs_from_one_unit_into_the_next() -> None:
    units = [CorpusUnit("a/artikel-1", "alfa beta"), CorpusUnit("b/artikel-1", "gamma delta")]
    index = build(units)
    assert index.candidates(("beta gamma",)) == []
    assert index.candidates(("gamma delta",)) == [1]
    assert index.candidates(("alfa beta",)) == [0]


def test_ascii_text_is_folded_as_the_full_normalization_folds_it() -> None:
    """The ASCII shortcut of normalization gives what NFKC, the typography and case
    folding give."""
    rng = random.Random(5)
    alphabet = [chr(code) for code in range(128)]
    for _ in range(500):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 40)))
        full = unicodedata.normalize("NFKC", text).translate(index_module._TYPOGRAPHY).casefold()
        assert index_module._folded(text) == full
        assert normalize_text(text) == " ".join(full.split())


def test_units_with_typography_are_indexed_by_their_normalized_words() -> None:
    units = [CorpusUnit("a/artikel-1", "Het Hof te ’s‑Gravenhage — beslist"), CorpusUnit("b/x", "")]
    index = build(units)
    assert index.find("hof te 's-gravenhage - beslist") == "a/artikel-1"
    assert index.candidates(("te 's",)) == [0]


@pytest.mark.parametrize("alphabet", [[chr(code) for code in range(128)], list("aB c’–éİ\u00a0ﬁ`")])
def test_the_words_of_a_text_are_those_of_its_normalized_form(alphabet: list[str]) -> None:
    """The index's words of a unit (`_words`, with its ASCII shortcut) are the words of the
    normalized text, which is what a quote's terms are made of."""
    rng = random.Random(9)
    for _ in range(2000):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 30)))
        assert index_module._words(text) == index_module._WORD.findall(normalize_text(text))
