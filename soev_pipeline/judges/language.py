"""An offline language detector with the bundled model of py3langid.

The model walks a text byte by byte in Python, so its time grows with the text. A
detector reads at most the first `MAX_CHARS` characters of a text, cut at a word boundary,
and the whole text only when those hold no language. The bound is far above a real
sentence (the longest in the demo replies, in 20,000 benchmark replies and in the docs
have 228, 795 and about 1,300 characters), so it only matters for a reply that the
sentence splitter cannot cut up. Such a text in one language reads the same on its head:
over 800 Dutch and English texts longer than 2,000 characters (runs of articles of law,
replies, paragraphs of the docs, also with their sentence marks taken out) the first
2,000 gave the answer of the whole text every time, as the first 1,000 did for the 1,530
texts longer than that. A text that changes language after its head is read as the
language of its head; `max_chars=None` reads every text whole.

Grading asks for the language of every sentence of every reply, so the detector's time is
most of the time of `reply.language`. A detector scores a text itself from the model's
arrays, in the steps of py3langid's `LanguageIdentifier.rank` with the same arithmetic in
the same order, but without what `rank` does on top (a sorted list of every label) and
with the model's table laid out for fast row gathers: 45 µs a sentence instead of 82 µs on
the benchmark's replies. A test compares its scores with py3langid's, bit for bit. The
answer for a text is remembered, for the sentences that recur across the attempts of a
case. (Remembering the byte walk per word was tried and was slower than walking.)
"""

from __future__ import annotations

import copy
import functools
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from soev_pipeline.core.errors import LanguageDetectionError

if TYPE_CHECKING:  # py3langid and numpy are imported with the model
    from py3langid.langid import LanguageIdentifier

_NO_LANGUAGE = "zxx"  # the model's label for text without linguistic content

CACHED_TEXTS = 4096
"""The most texts a detector remembers the answer of; past it, it starts afresh."""

MAX_CHARS = 2000
"""The most characters of a text that `LangidDetector` reads by default (see above)."""

DEFAULT_LANGUAGES: frozenset[str] = frozenset(
    """
    bg cs da de el en es et fi fr ga hr hu it lt lv mt nl pl pt ro sk sl sv
    ar fa hi id ja ko ru so tr uk zh
    """.split()  # noqa: SIM905
)
"""The candidate languages of `LangidDetector` by default.

The 24 official languages of the European Union, and the most spoken other languages in
the Netherlands and the world. Left out on purpose are the close relatives of Dutch that
the model confuses with it on short sentences: Afrikaans, Frisian and Luxembourgish. On
short Dutch sentences of legal advice ("Vraag om uitstel.", "Dit is in beginsel
toegestaan.") the full model answered Afrikaans or Frisian for about one sentence in
seventeen; that is enough to fail most Dutch replies at `min_share: 1.0`. A reply in
English, German, French or another candidate still fails a Dutch criterion; a reply in
Afrikaans or Frisian reads as Dutch. Give `languages=None` to use every language of the
model.
"""


@functools.cache
def _full_model() -> LanguageIdentifier:
    """The bundled model, read once per process (half a second); each detector restricts a
    shallow copy of it, which leaves the full model's arrays as they are."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


class LangidDetector:
    """A `LanguageDetector` with the bundled model of py3langid.

    The model runs offline and gives the same answer for the same text. Each detector has
    its own copy of the model, so restricting its languages changes no other detector.

    Args:
        languages: the ISO 639-1 codes the detector may answer with; None for every
            language of the model. The default is `DEFAULT_LANGUAGES`.
        max_chars: the most characters of a text the detector reads, cut at a word
            boundary; None to read every text whole. The default is `MAX_CHARS`.

    Raises:
        ValueError: a code of `languages` is not a language of the model, or
            `max_chars` is below 1.
    """

    def __init__(
        self,
        languages: Iterable[str] | None = DEFAULT_LANGUAGES,
        max_chars: int | None = MAX_CHARS,
    ) -> None:
        if max_chars is not None and max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {max_chars}")
        self._max_chars = max_chars
        self._identifier = copy.copy(_full_model())
        labels = set(self._identifier.labels)
        if languages is not None:
            chosen = set(languages)
            unknown = sorted(chosen - labels)
            if unknown or not chosen:
                raise ValueError(f"not languages of the py3langid model: {unknown}")
            self._identifier.set_languages(sorted(chosen | ({_NO_LANGUAGE} & labels)))
        self._languages = frozenset(self._identifier.labels) - {_NO_LANGUAGE}
        self._scorer = _Scorer(self._identifier)
        self._answers: dict[str, str | LanguageDetectionError] = {}

    @property
    def languages(self) -> frozenset[str]:
        """The codes this detector may answer with."""
        return self._languages

    def detect(self, text: str) -> str:
        """Return the ISO 639-1 code of the language of `text`, one sentence.

        Of a text longer than `max_chars`, the detector reads the first `max_chars`
        characters, or the whole text when those hold no language.

        Raises:
            LanguageDetectionError: `text` is empty or blank, has no letter, gives the
                model nothing to go on (it scores it as it scores the empty text), or the
                model labels it as no linguistic content.
        """
        answer = self._answers.get(text)
        if answer is None:
            answer = self._answer(text)
            if len(self._answers) >= CACHED_TEXTS:
                self._answers.clear()
            self._answers[text] = answer
        if isinstance(answer, LanguageDetectionError):
            raise LanguageDetectionError(*answer.args)
        return answer

    def _answer(self, text: str) -> str | LanguageDetectionError:
        if self._max_chars is not None and len(text) > self._max_chars:
            try:
                return self._detect(_head(text, self._max_chars))
            except LanguageDetectionError:
                pass
        try:
            return self._detect(text)
        except LanguageDetectionError as exc:
            return exc

    def _detect(self, text: str) -> str:
        if not text.strip():
            raise LanguageDetectionError("the text is empty")
        if not any(char.isalpha() for char in text):
            raise LanguageDetectionError("the text has no letters")
        language = self._scorer.best(text)
        if language is None:
            raise LanguageDetectionError("the model finds no language feature in the text")
        if language == _NO_LANGUAGE:
            raise LanguageDetectionError("the model finds no linguistic content in the text")
        return language


class _Scorer:
    """The best label of `LanguageIdentifier.rank` (normalized scores).

    It reads the identifier's model arrays and repeats py3langid 0.4's scoring step by step
    (`_encode`, `_decide`, `rank`), so that every answer is the one `rank` gives.
    """

    def __init__(self, identifier: LanguageIdentifier) -> None:
        import numpy as np

        self._np = np
        self._classes: list[str] = list(identifier.nb_classes)
        # the same values, laid out for fast row gathers: numpy widens float16 to float32
        # before it multiplies anyway
        self._ptc: Any = np.ascontiguousarray(identifier.nb_ptc, dtype=np.float32)
        self._pc: Any = identifier.nb_pc
        self._nextmove: Any = identifier.tk_nextmove
        self._rowbase: list[int] = [row << 8 for row in identifier.tk_row]
        self._output: list[int] = identifier.tk_output
        first: dict[str, int] = {}
        self._aliases: list[tuple[int, int]] = []
        for index, label in enumerate(self._classes):
            if label in first:
                self._aliases.append((first[label], index))
            else:
                first[label] = index
        self._featureless = self._scores(b"")

    def best(self, text: str) -> str | None:
        """The label `rank(text)` puts first, or None when the text scores as the empty
        text does (no feature of the model in it)."""
        if text.isupper():
            text = text.lower()
        data = unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")
        scores = self._scores(data)
        if self._np.array_equal(scores, self._featureless):
            return None
        # rank sorts the labels by score, stably: the first of the best comes first
        return self._classes[int(scores.argmax())]

    def _scores(self, data: bytes) -> Any:
        np = self._np
        features = self._features(data)
        if features:
            visits = Counter(features)
            idx = np.fromiter(visits.keys(), dtype=np.intp, count=len(visits))
            counts = np.fromiter(visits.values(), dtype=np.float32, count=len(visits))
            scores = np.log1p(counts) @ self._ptc[idx] + self._pc
        else:
            scores = np.full(len(self._classes), 0.0, dtype=np.float32)
        scores *= 1.0 / math.sqrt(len(data) or 1)
        np.exp(scores - scores.max(), out=scores)
        scores /= scores.sum()
        for kept, dropped in self._aliases:
            scores[kept] += scores[dropped]
            scores[dropped] = 0.0
        return scores

    def _features(self, data: bytes) -> list[int]:
        """The model's features in `data`, in the order the byte walk meets them."""
        nextmove, rowbase, output = self._nextmove, self._rowbase, self._output
        features: list[int] = []
        state = 0
        for byte in data:
            state = nextmove[rowbase[state] + byte]
            feature = output[state]
            if feature >= 0:
                features.append(feature)
        return features


def _head(text: str, size: int) -> str:
    """The first `size` characters of a longer `text`, without a word cut in two."""
    head = text[:size]
    if head[-1].isspace() or text[size].isspace():
        return head
    words = head.rsplit(maxsplit=1)
    return words[0] if len(words) == 2 else head


class LazyLangidDetector:
    """A `LangidDetector` made on first use.

    Its model takes half a second to load, and a project without `reply.language` never
    needs it: this is the detector a run gets when its runtime gives none.
    """

    def __init__(self) -> None:
        self._detector: LangidDetector | None = None

    def _loaded(self) -> LangidDetector:
        if self._detector is None:
            self._detector = LangidDetector()
        return self._detector

    @property
    def languages(self) -> frozenset[str]:
        """The codes the detector may answer with."""
        return self._loaded().languages

    def detect(self, text: str) -> str:
        return self._loaded().detect(text)
