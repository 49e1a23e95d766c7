"""An offline language detector with the bundled model of py3langid."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from soev_pipeline.core.errors import LanguageDetectionError

_NO_LANGUAGE = "zxx"  # the model's label for text without linguistic content

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
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


class LangidDetector:
    """A `LanguageDetector` with the bundled model of py3langid.

    The model runs offline and gives the same answer for the same text. Each detector has
    its own copy of the model, so restricting its languages changes no other detector.

    Args:
        languages: the ISO 639-1 codes the detector may answer with; None for every
            language of the model. The default is `DEFAULT_LANGUAGES`.

    Raises:
        ValueError: a code of `languages` is not a language of the model.
    """

    def __init__(self, languages: Iterable[str] | None = DEFAULT_LANGUAGES) -> None:
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

        Raises:
            LanguageDetectionError: `text` is empty or blank, has no letter, gives the
                model nothing to go on (it scores it as it scores the empty text), or the
                model labels it as no linguistic content.
        """
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
