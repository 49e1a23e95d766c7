"""A small corpus of Dutch law units (paraphrased) for the corpus tests."""

from __future__ import annotations

import pytest

from soev_pipeline.corpus import CorpusLookup, CorpusUnit

AWB = "Algemene wet bestuursrecht"


def awb(article: str | None, text: str, unit_id: str | None = None) -> CorpusUnit:
    unit_id = unit_id or f"BWBR0005537/artikel-{article}"
    return CorpusUnit(unit_id, text, law=AWB, aliases=("Awb",), article=article)


def bw(book: int, article: str, text: str) -> CorpusUnit:
    unit_id = f"BWBR000{5283 + book}/artikel-{article}"
    law = f"Burgerlijk Wetboek Boek {book}"
    return CorpusUnit(unit_id, text, law=law, aliases=("BW", "Burgerlijk Wetboek"), article=article)


def units() -> list[CorpusUnit]:
    return [
        awb(
            "6:7",
            "De termijn voor het indienen van een bezwaarschrift of beroepschrift\n"
            "bedraagt  zes weken.",
        ),
        awb(
            "6:8",
            "De termijn vangt aan op de dag na die waarop het besluit op de gebruikelijke "
            "wijze bekend is gemaakt.",
        ),
        awb("8:1", "Een belanghebbende kan tegen een besluit beroep instellen bij de rechter."),
        awb(
            None,
            "Bij het voorbereiden van een besluit verzamelt het bestuursorgaan de nodige kennis.",
            unit_id="BWBR0005537/artikel-3:2",
        ),
        bw(
            6,
            "6:162",
            "Wie een ander onrechtmatig schade toebrengt die hem kan worden aangerekend, "
            "vergoedt die schade.",
        ),
        bw(
            7,
            "7:658",
            "De werkgever richt het werk zo in dat de werknemer veilig kan werken, en "
            "vergoedt schade die de werknemer bij het werk lijdt.",
        ),
        CorpusUnit(
            "BWBR0001840/artikel-10/lid-2",
            "De wet stelt regels ter bescherming van de persoonlijke levenssfeer.",
            law="Grondwet",
            article="10",
        ),
        CorpusUnit(
            "BWBR0001840/artikel-10",
            "Ieder heeft recht op eerbiediging van zijn persoonlijke levenssfeer, "
            "behoudens bij of krachtens de wet gestelde beperkingen.",
            law="Grondwet",
            article="10",
        ),
        CorpusUnit(
            "BWBR0001854/artikel-1",
            "De rechtbank te ’s-Gravenhage – en niet een andere – beslist\u00a0hierover.",
        ),
    ]


@pytest.fixture
def corpus() -> CorpusLookup:
    return CorpusLookup.from_units(units())
