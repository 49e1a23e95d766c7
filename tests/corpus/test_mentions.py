"""Tests of article mentions: the phrasings a reply uses, and their resolution to units."""

from __future__ import annotations

import pytest

from soev_pipeline.corpus import CorpusLookup, CorpusUnit
from soev_pipeline.corpus.mentions import MentionIndex, article_key, law_key


def resolved(corpus: CorpusLookup, text: str) -> list[tuple[str, str | None]]:
    index = corpus.mention_index()
    mentions, _ = index.find_mentions(text)
    return [(mention.article, index.resolve(mention)) for mention in mentions]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Volgens artikel 6:7 Awb is dat zes weken.", [("6:7", "BWBR0005537/artikel-6:7")]),
        ("Zie art. 6:162 BW.", [("6:162", "BWBR0005289/artikel-6:162")]),
        (
            "Dat volgt uit artikel 7:658 van het Burgerlijk Wetboek.",
            [("7:658", "BWBR0005290/artikel-7:658")],
        ),
        ("Artikel 10 Grondwet beschermt dit.", [("10", "BWBR0001840/artikel-10")]),
        (
            "Op grond van artikel 8:1, eerste lid, Awb kan dat.",
            [("8:1", "BWBR0005537/artikel-8:1")],
        ),
        (
            "Zie artikel 6:8 van de Algemene wet bestuursrecht",
            [("6:8", "BWBR0005537/artikel-6:8")],
        ),
        ("Lees artikel 6:8 van de Awb.", [("6:8", "BWBR0005537/artikel-6:8")]),
        ("lees ARTIKEL 6:8 awb", [("6:8", "BWBR0005537/artikel-6:8")]),
        ("Zie art.6:162 BW", [("6:162", "BWBR0005289/artikel-6:162")]),
        ("artikel 6:7 lid 1 onder a Awb", [("6:7", "BWBR0005537/artikel-6:7")]),
        ("artikel 8:1, aanhef en onder b, Awb", [("8:1", "BWBR0005537/artikel-8:1")]),
        ("artikel 6:7, leden 1 en 2, Awb", [("6:7", "BWBR0005537/artikel-6:7")]),
        ("zie artikel 6:7 (Awb)", [("6:7", "BWBR0005537/artikel-6:7")]),
        ("Zie art. 6:162 B.W. hierover.", [("6:162", "BWBR0005289/artikel-6:162")]),
        (
            "artikel 6:7 tot en met 6:9 Awb",
            [("6:7", "BWBR0005537/artikel-6:7"), ("6:9", None)],
        ),
    ],
)
def test_phrasings_resolve(
    corpus: CorpusLookup, text: str, expected: list[tuple[str, str | None]]
) -> None:
    assert resolved(corpus, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "De artikelen 6:7 en 6:8 Awb regelen de termijn.",
        "De artikelen 6:7, 6:8 en 8:1 Awb.",
        "Zie artikel 6:7 en artikel 6:8 Awb.",
        "Zie artt. 6:7 jo. 6:8 Awb.",
        "Zie artikel 6:7-6:8 Awb.",
    ],
)
def test_lists_share_the_law_named_after_them(corpus: CorpusLookup, text: str) -> None:
    found = resolved(corpus, text)
    assert ("6:7", "BWBR0005537/artikel-6:7") in found
    assert ("6:8", "BWBR0005537/artikel-6:8") in found
    assert all(unit is not None for _, unit in found)


def test_two_references_with_their_own_laws(corpus: CorpusLookup) -> None:
    text = "Artikel 6:7 Awb en artikel 6:162 BW gelden hier niet samen."
    assert resolved(corpus, text) == [
        ("6:7", "BWBR0005537/artikel-6:7"),
        ("6:162", "BWBR0005289/artikel-6:162"),
    ]


def test_unknown_law_does_not_resolve(corpus: CorpusLookup) -> None:
    index = corpus.mention_index()
    mentions, without_law = index.find_mentions("Volgens artikel 3 lid 2 Wet Fantasie mag dat.")
    assert without_law == 0
    [mention] = mentions
    assert (mention.article, mention.law, mention.law_key) == ("3", "Wet Fantasie", None)
    assert mention.text == "artikel 3 lid 2 Wet Fantasie"
    assert index.resolve(mention) is None


def test_known_law_unknown_article_does_not_resolve(corpus: CorpusLookup) -> None:
    assert resolved(corpus, "artikel 6:99 Awb") == [("6:99", None)]


@pytest.mark.parametrize(
    "text",
    [
        "Artikel 6:7 bepaalt de termijn.",
        "Zie artikel 6:7. De termijn is kort.",
        "Dat staat in artikel 3 van de wet.",
    ],
)
def test_a_reference_without_a_law_is_only_counted(corpus: CorpusLookup, text: str) -> None:
    mentions, without_law = corpus.mention_index().find_mentions(text)
    assert (mentions, without_law) == ([], 1)


@pytest.mark.parametrize(
    "text", ["Geen verwijzing hier.", "De kunst (art) is vrij.", "Het artikelnummer 5 Awb."]
)
def test_text_without_references(corpus: CorpusLookup, text: str) -> None:
    assert corpus.mention_index().find_mentions(text) == ([], 0)


def test_dotted_labels() -> None:
    index = MentionIndex.build([CorpusUnit("O/artikel-5.1", "t", law="Omgevingswet")])
    [mention] = index.find_mentions("Zie art. 5.1, tweede lid, van de Omgevingswet.")[0]
    assert (mention.article, index.resolve(mention)) == ("5.1", "O/artikel-5.1")


def test_label_from_the_id_when_the_unit_has_no_article(corpus: CorpusLookup) -> None:
    assert resolved(corpus, "artikel 3:2 Awb") == [("3:2", "BWBR0005537/artikel-3:2")]


def test_the_article_itself_wins_over_its_lid() -> None:
    units = [
        CorpusUnit("G/artikel-10/lid-2", "tekst", law="Grondwet", article="10"),
        CorpusUnit("G/artikel-10", "tekst", law="Grondwet", article="10"),
    ]
    index = MentionIndex.build(units)
    [mention] = index.find_mentions("artikel 10 Grondwet")[0]
    assert index.resolve(mention) == "G/artikel-10"


def test_units_without_law_are_not_indexed() -> None:
    index = MentionIndex.build([CorpusUnit("X/artikel-1", "tekst", article="1")])
    [mention] = index.find_mentions("artikel 1 Grondwet")[0]
    assert mention.law_key is None


def test_keys() -> None:
    assert law_key("de  Algemene wet-bestuursrecht") == "algemene wet bestuursrecht"
    assert law_key("Het BW") == "bw"
    assert article_key(" Artikel 6:7 ") == "6:7"
    assert article_key("art. 3 A") == "3a"
