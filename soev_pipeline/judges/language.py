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
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from soev_pipeline.core.errors import LanguageDetectionError

if TYPE_CHECKING:  # py3langid and numpy are imported with the model
    from py3langid.langid import LanguageIdentifier

_NO_LANGUAGE = "zxx"  # the model's label for text without linguistic content

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
        self._featureless = self._identifier.rank("")

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
        if self._max_chars is not None and len(text) > self._max_chars:
            try:
                return self._detect(_head(text, self._max_chars))
            except LanguageDetectionError:
                pass
        return self._detect(text)

    def _detect(self, text: str) -> str:
        if not text.strip():
            raise LanguageDetectionError("the text is empty")
        if not any(char.isalpha() for char in text):
            raise LanguageDetectionError("the text has no letters")
        ranked = self._identifier.rank(text)
        if ranked == self._featureless:
            raise LanguageDetectionError("the model finds no language feature in the text")
        language = str(ranked[0][0])
        if language == _NO_LANGUAGE:
            raise LanguageDetectionError("the model finds no linguistic content in the text")
        return language


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
