"""The offline language detector: Dutch, English and German, its candidates and its errors."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from soev_pipeline.core import LanguageDetectionError, LanguageDetector
from soev_pipeline.judges import LangidDetector
from soev_pipeline.judges.language import _DEPTH, _RESET, DEFAULT_LANGUAGES, MAX_CHARS, _head

REPO = Path(__file__).resolve().parents[2]

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


def dutch_articles() -> list[str]:
    lines = (REPO / "examples" / "demo" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


def english_prompts() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in sorted((REPO / "prompts").glob("*.md"))]


def long_texts() -> list[tuple[str, str]]:
    """Texts longer than `MAX_CHARS` in one language, and that language.

    Dutch: runs of articles of the demo corpus. English: the judge's prompts. Each also
    as one long sentence, as a reply that the sentence splitter cannot cut up reaches the
    detector.
    """
    articles = dutch_articles()
    dutch = [" ".join(articles[start : start + 9]) for start in range(0, len(articles) - 8, 4)]
    prompts = english_prompts()
    english = [*prompts, *(first + "\n\n" + second for first, second in pairwise(prompts))]
    texts = [(text, "nl") for text in dutch] + [(text, "en") for text in english]
    texts += [(re.sub(r"[.!?:]\s+", "; ", text), language) for text, language in texts]
    return [(text, language) for text, language in texts if len(text) > MAX_CHARS]


@pytest.fixture(scope="module")
def whole() -> LangidDetector:
    return LangidDetector(max_chars=None)


def test_a_long_text_in_one_language_reads_the_same_on_its_head(
    detector: LangidDetector, whole: LangidDetector
) -> None:
    texts = long_texts()
    assert len(texts) >= 30
    assert {"nl", "en"} == {language for _, language in texts}
    for text, language in texts:
        assert detector.detect(text) == whole.detect(text) == language, text[:80]


def test_a_text_that_changes_language_after_the_head_reads_as_its_start(
    detector: LangidDetector, whole: LangidDetector
) -> None:
    """The limit of the bound: the rest of a text that long is not read."""
    dutch = " ".join(dutch_articles()[:8])
    english = " ".join(english_prompts())
    assert MAX_CHARS < len(dutch) < len(english)
    assert whole.detect(f"{dutch} {english}") == "en"
    assert detector.detect(f"{dutch} {english}") == "nl"


def test_a_head_without_language_leaves_the_whole_text_to_read(
    detector: LangidDetector, whole: LangidDetector
) -> None:
    text = "6:162, " * (MAX_CHARS // 5) + "De werkgever is aansprakelijk voor de schade."
    assert detector.detect(text) == whole.detect(text) == "nl"


@pytest.mark.parametrize(
    ("text", "size", "head"),
    [
        ("bezwaar binnen zes weken", 10, "bezwaar"),  # "binnen" would be cut in two
        ("bezwaar binnen zes weken", 14, "bezwaar binnen"),  # cut before a space
        ("bezwaar binnen zes weken", 15, "bezwaar binnen "),
        ("bezwaarschrift", 7, "bezwaar"),  # one word: cut anyway
    ],
)
def test_the_head_ends_at_a_word_boundary(text: str, size: int, head: str) -> None:
    assert _head(text, size) == head


def test_max_chars_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        LangidDetector(max_chars=0)


def scored_texts() -> list[str]:
    """Texts of every sort the detector meets: the demo corpus's articles, the judge's
    prompts, the paragraphs and sentences of the docs, and odd ones."""
    docs = [
        paragraph
        for page in sorted((REPO / "docs").glob("*.md"))
        for paragraph in page.read_text(encoding="utf-8").split("\n\n")
    ]
    sentences = [sentence for text in docs for sentence in re.split(r"(?<=[.!?])\s+", text)]
    odd = ["", " ", "a", "123", "ZES WEKEN BEZWAAR", "Ünïcödé €€ 日本語", "\ud800 los", "a  b\tc "]
    texts = [*dutch_articles(), *english_prompts(), *docs, *sentences]
    return [*texts[::4], *SHORT_DUTCH, *odd]


@pytest.mark.parametrize("languages", [DEFAULT_LANGUAGES, None, ["nl", "en"]])
def test_every_answer_and_score_is_py3langids_own(languages: list[str] | None) -> None:
    """The detector's scoring gives the scores of `LanguageIdentifier`, bit for bit, and so
    the label its `rank` puts first: for each text alone and for all of them scored at once."""
    detector = LangidDetector(languages=languages)
    identifier, scorer = detector._identifier, detector._scorer
    featureless = identifier.rank("")
    texts = scored_texts()
    assert len(texts) > 600
    together = scorer._scores_many([identifier._encode(text) for text in texts])
    expected = []
    for text, scores in zip(texts, together, strict=True):
        decided = identifier._decide(text).tobytes()
        assert scores.tobytes() == scorer._scores(identifier._encode(text)).tobytes() == decided
        ranked = identifier.rank(text)
        expected.append(None if ranked == featureless else ranked[0][0])
    assert scorer.best(texts) == expected
    assert [scorer.best([text])[0] for text in texts[::7]] == expected[::7]


def walked(detector: LangidDetector, data: bytes) -> list[int]:
    """The features py3langid's byte walk meets in `data`, one by one, as it walks."""
    identifier = detector._identifier
    rowbase = [row << 8 for row in identifier.tk_row]
    state, met = 0, []
    for byte in data:
        state = identifier.tk_nextmove[rowbase[state] + byte]
        if identifier.tk_output[state] >= 0:
            met.append(identifier.tk_output[state])
    return met


def counted(met: list[int]) -> tuple[list[int], list[float]]:
    """The features of a walk in the order first met, and how often each was met."""
    counts = Counter(met)
    return list(counts), [float(count) for count in counts.values()]


def test_the_features_are_the_byte_walks_for_any_bytes(detector: LangidDetector) -> None:
    """Counting the features without walking gives the walk's counts in the walk's order,
    for texts of every sort and for random bytes (each alone and all together), including
    texts shorter than the automaton's depth and texts beside empty ones."""
    generator = random.Random(32)
    alphabet = b"aeioun tdrsl" + "éëï".encode()
    datas = [text.encode("utf8", errors="surrogatepass") for text in scored_texts()[::5]]
    for _ in range(200):
        size = generator.choice([0, 1, 2, 5, 6, 7, 40, 300])
        datas.append(
            bytes(
                generator.randrange(256) if generator.random() < 0.3 else generator.choice(alphabet)
                for _ in range(size)
            )
        )
    scorer = detector._scorer
    features, counts, bounds = scorer._features(datas)
    assert counts.dtype == "float32"
    assert len(bounds) == len(datas) + 1
    for index, data in enumerate(datas):
        each = slice(bounds[index], bounds[index + 1])
        expected = counted(walked(detector, data))
        assert (features[each].tolist(), counts[each].tolist()) == expected, data
    alone, alone_counts, _ = scorer._features([datas[-1]])
    assert (alone.tolist(), alone_counts.tolist()) == counted(walked(detector, datas[-1]))


def test_the_automaton_is_as_deep_as_the_scorer_assumes(detector: LangidDetector) -> None:
    """Every state of the model's automaton stands for at most `_DEPTH` bytes (its
    shortest way from the start), and from a sample of states each byte leads where the
    last `_DEPTH` bytes of that way and the byte lead from the start: the premise of
    counting the features from windows of `_DEPTH` bytes."""
    identifier = detector._identifier
    rowbase = [row << 8 for row in identifier.tk_row]
    nextmove = identifier.tk_nextmove
    ways: dict[int, bytes] = {0: b""}
    frontier = [0]
    while frontier:
        reached = []
        for state in frontier:
            row = nextmove[rowbase[state] : rowbase[state] + 256]
            for byte, target in enumerate(row):
                if target not in ways:
                    ways[target] = ways[state] + bytes([byte])
                    reached.append(target)
        frontier = reached
    assert len(ways) == len(identifier.tk_output)
    assert max(map(len, ways.values())) == _DEPTH

    def walk(data: bytes) -> int:
        state = 0
        for byte in data:
            state = nextmove[rowbase[state] + byte]
        return state

    generator = random.Random(6)
    for state in generator.sample(sorted(ways), 300):
        for byte in range(256):
            window = (ways[state] + bytes([byte]))[-_DEPTH:]
            assert nextmove[rowbase[state] + byte] == walk(window)
    assert all(nextmove[base + _RESET] == 0 for base in rowbase)


def test_an_answer_is_remembered_and_an_error_raised_again(detector: LangidDetector) -> None:
    text = "De werkgever is aansprakelijk voor de schade."
    assert detector.detect(text) == detector.detect(text) == "nl"
    assert detector._answers[text] == "nl"
    for _ in range(2):
        with pytest.raises(LanguageDetectionError, match=r"no (language|linguistic)"):
            detector.detect("xyz")
