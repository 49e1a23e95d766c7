"""The Dutch-aware sentence splitter and the words that count as language."""

from __future__ import annotations

import pytest

from soev_pipeline.text import letter_words, split_sentences


@pytest.mark.parametrize(
    "sentence",
    [
        "Volgens art. 6:162 BW moet de dader de schade vergoeden.",
        "De werkgever is o.a. verplicht om instructies te geven.",
        "Denk bijv. aan een val van een trap.",
        "Zie nr. 12 van de memorie van toelichting.",
        "Dit volgt uit art. 7:658 jo. 6:170 BW.",
        "De termijn staat in artikel 6:7 lid 1 Awb.",
        "Het gaat om huur, koop e.d. van roerende zaken.",
        "Er is niets geregeld m.b.t. de proeftijd.",
        "Stuur de brief t.a.v. de afdeling bezwaar.",
        "Neem z.s.m. contact op met de rechtbank.",
        "Een rechtspersoon, zoals een bv. of nv, kan ook aansprakelijk zijn.",
        "De zaak is behandeld door mr. Jansen.",
        "U kunt dhr. De Vries of mevr. Bakker bellen.",
        "Het advies is van J.P. de Groot en A. Smit.",
        "Paragraaf 1.2 van de regeling geldt ook.",
        "Er zijn twee stappen: 1. bezwaar en 2. beroep.",
        "De Mr. Visser-stichting helpt gratis.",
    ],
)
def test_abbreviations_initials_and_labels_keep_a_sentence_whole(sentence: str) -> None:
    assert split_sentences(sentence) == [sentence]


def test_a_reply_is_cut_at_each_sentence_end() -> None:
    reply = (
        "De termijn is zes weken (art. 6:7 Awb). Die begint na de bekendmaking! "
        "Bent u te laat? Dan is het bezwaar niet-ontvankelijk."
    )
    assert split_sentences(reply) == [
        "De termijn is zes weken (art. 6:7 Awb).",
        "Die begint na de bekendmaking!",
        "Bent u te laat?",
        "Dan is het bezwaar niet-ontvankelijk.",
    ]


@pytest.mark.parametrize(
    ("reply", "first"),
    [
        ("Het gaat om huur, koop e.d. Daarnaast geldt de wet.", "Het gaat om huur, koop e.d."),
        ("Dat staat in art. 6:162 BW. Lees dat eerst.", "Dat staat in art. 6:162 BW."),
        ("Zie de uitspraak uit 2019. De rechter oordeelde anders.", "Zie de uitspraak uit 2019."),
        ('Hij zei: "Ik betaal niet." Daarna ging hij weg.', 'Hij zei: "Ik betaal niet."'),
    ],
)
def test_a_sentence_may_end_after_a_number_label_or_closing_abbreviation(
    reply: str, first: str
) -> None:
    sentences = split_sentences(reply)
    assert len(sentences) == 2
    assert sentences[0] == first


def test_markdown_blocks_are_sentences_without_their_markers() -> None:
    reply = (
        "## Wat kunt u doen\n"
        "\n"
        "U hebt twee mogelijkheden:\n"
        "1. Maak bezwaar binnen zes weken\n"
        "2. Vraag een voorlopige voorziening\n"
        "- Let op de kosten\n"
        "> Dit is geen advies\n"
        "\n"
        "Een zin die over\n"
        "twee regels loopt."
    )
    assert split_sentences(reply) == [
        "Wat kunt u doen",
        "U hebt twee mogelijkheden:",
        "Maak bezwaar binnen zes weken",
        "Vraag een voorlopige voorziening",
        "Let op de kosten",
        "Dit is geen advies",
        "Een zin die over twee regels loopt.",
    ]


def test_blank_text_has_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n \t") == []


def test_letter_words_leave_out_numbers_labels_ids_abbreviations_and_acronyms() -> None:
    sentence = 'Zie o.a. "art. 6:162 BW" en BWBR0005537/artikel-6:7 van het UWV, 2019.'
    assert letter_words(sentence) == ["Zie", "en", "van", "het"]
    assert letter_words("Conform (art. 8:1 Awb) jo. art. 6:7 Sr.") == ["Conform"]


def test_letter_words_can_stop_after_the_first_few() -> None:
    sentence = "Zie art. 6:7 Awb en lid 2 van het besluit."
    assert letter_words(sentence, 3) == ["Zie", "en", "lid"]
    assert letter_words(sentence, 9) == letter_words(sentence)
    assert letter_words(sentence) == [*letter_words(sentence, 4), "het", "besluit"]
    assert letter_words("Conform art. 8:1 Awb.", 3) == ["Conform"]


def test_letter_words_keep_inner_hyphens_apostrophes_and_one_letter_words() -> None:
    assert letter_words("U bent ex-werknemer, net als zzp'ers.") == [
        "U",
        "bent",
        "ex-werknemer",
        "net",
        "als",
        "zzp'ers",
    ]
