"""The offline language detector: Dutch, English and German, its candidates and its errors."""

from __future__ import annotations

import pytest

from soev_pipeline.core import LanguageDetectionError, LanguageDetector
from soev_pipeline.judges import LangidDetector
from soev_pipeline.judges.language import DEFAULT_LANGUAGES

# Short sentences of Dutch legal advice. The full model reads some of them as Afrikaans or
# Frisian; the default candidates read each as Dutch.
SHORT_DUTCH = [
    "Vraag om uitstel.",
    "De notaris stelt de akte op.",
    "Dit is in beginsel toegestaan.",
    "Dat mag niet.",
    "De rechter beslist.",
    "Het besluit is nietig.",
    "Bezwaar is mogelijk.",
    "Uw werkgever moet betalen.",
    "De termijn is verstreken.",
    "Het beroep is ongegrond.",
    "De koper kan ontbinden.",
    "Stuur de brief aangetekend.",
    "Een testament kunt u altijd herroepen.",
    "Neem de opzegtermijn in acht.",
    "Bewaar alle bewijsstukken goed.",
    "Ik raad u aan advies te vragen.",
    "Zonder toestemming mag dat niet.",
    "De erfgenamen kunnen de nalatenschap beneficiair aanvaarden.",
]


@pytest.fixture(scope="module")
def full() -> LangidDetector:
    return LangidDetector(languages=None)


def test_it_is_a_language_detector(detector: LangidDetector) -> None:
    assert isinstance(detector, LanguageDetector)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Volgens art. 6:162 BW moet degene die onrechtmatig handelt de schade vergoeden.", "nl"),
        ("U moet binnen zes weken bezwaar maken bij het bestuursorgaan.", "nl"),
        ("The employer is liable for the damage that the employee suffers at work.", "en"),
        ("You must object within six weeks of the decision.", "en"),
        ("Der Arbeitgeber haftet für den Schaden, den der Arbeitnehmer erleidet.", "de"),
        ("Gegen den Bescheid können Sie innerhalb eines Monats Widerspruch einlegen.", "de"),
        ("Le juge peut ordonner la résiliation du contrat.", "fr"),
    ],
)
def test_it_detects_the_language(detector: LangidDetector, text: str, language: str) -> None:
    assert detector.detect(text) == language


@pytest.mark.parametrize("sentence", SHORT_DUTCH)
def test_short_dutch_legal_sentences_are_dutch(detector: LangidDetector, sentence: str) -> None:
    assert detector.detect(sentence) == "nl"


def test_the_full_model_misreads_some_of_them(full: LangidDetector) -> None:
    """Why the default candidates leave out Afrikaans and Frisian."""
    misread = {full.detect(sentence) for sentence in SHORT_DUTCH} - {"nl"}
    assert misread & {"af", "fy"}


def test_it_answers_the_same_every_time(detector: LangidDetector) -> None:
    text = "De huurder kan de overeenkomst opzeggen."
    answers = {detector.detect(text) for _ in range(5)}
    assert answers == {LangidDetector().detect(text)} == {"nl"}


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_or_blank_text_is_an_error(detector: LangidDetector, text: str) -> None:
    with pytest.raises(LanguageDetectionError, match="empty"):
        detector.detect(text)


@pytest.mark.parametrize("text", ["123 456", "6:162", "2019/20, 35 300", "§ 1.2 — 3"])
def test_text_without_letters_is_an_error(detector: LangidDetector, text: str) -> None:
    with pytest.raises(LanguageDetectionError, match="no letters"):
        detector.detect(text)


@pytest.mark.parametrize("text", ["art. 6:162 BW", "e.d.", "xyz"])
def test_text_the_model_finds_no_language_in_is_an_error(
    detector: LangidDetector, text: str
) -> None:
    with pytest.raises(LanguageDetectionError, match=r"no (language|linguistic)"):
        detector.detect(text)


def test_the_candidates_can_be_chosen_and_are_reported() -> None:
    chosen = LangidDetector(languages=["nl", "en"])
    assert chosen.languages == frozenset({"nl", "en"})
    assert chosen.detect("Der Arbeitgeber haftet für den Schaden des Arbeitnehmers.") in {
        "nl",
        "en",
    }


def test_the_default_candidates(detector: LangidDetector) -> None:
    assert detector.languages == DEFAULT_LANGUAGES
    assert {"nl", "en", "de", "fr", "tr", "ar"} <= DEFAULT_LANGUAGES
    assert not DEFAULT_LANGUAGES & {"af", "fy", "lb"}


def test_all_languages_of_the_model(full: LangidDetector) -> None:
    everything = full.languages
    assert {"af", "fy", "nl", "en"} <= everything
    assert "zxx" not in everything


@pytest.mark.parametrize("languages", [["nl", "xx"], []])
def test_unknown_or_no_candidates_are_refused(languages: list[str]) -> None:
    with pytest.raises(ValueError, match="not languages of the py3langid model"):
        LangidDetector(languages=languages)
