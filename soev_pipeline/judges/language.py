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
most of the time of `reply.language`. A detector scores texts itself from the model's
arrays, in the steps of py3langid's `LanguageIdentifier.rank` with the same arithmetic in
the same order, but without what `rank` does on top (a sorted list of every label), and
without walking the bytes one by one in Python: it finds and counts the model's features
in all the texts of a call at once with numpy (`_Scorer`), then scores them all at once,
each step element by element or along a text's row as `rank` does on one text, and only
the product of a text's features with the model's weights one text at a time. Grading asks
for every sentence of a chunk of replies in one call (`reply.language` prepares the
chunk), so numpy is called per chunk, not per sentence. A test compares its scores with
py3langid's, bit for bit, and its features with the byte walk's. The answer for a text is
remembered, for the sentences that recur across the attempts of a case.
"""

from __future__ import annotations

import copy
import functools
import itertools
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from soev_pipeline.core.errors import LanguageDetectionError

if TYPE_CHECKING:  # py3langid and numpy are imported with the model
    from py3langid.langid import LanguageIdentifier

_NO_LANGUAGE = "zxx"  # the model's label for text without linguistic content

CACHED_TEXTS = 4096
"""The most texts a detector remembers the answer of; past it, it starts afresh."""

_DEPTH = 6
"""The longest string of bytes a state of the model's automaton stands for."""

_RESET = 0xFF
"""A byte that is in no string of the model (it is never in UTF-8): it leads every state of
the automaton back to its start."""

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
        answer = self.detect_many([text])[0]
        if isinstance(answer, LanguageDetectionError):
            raise answer
        return answer

    def detect_many(self, texts: Sequence[str]) -> list[str | LanguageDetectionError]:
        """The answer of `detect` for each of `texts`: its code, or the error it raises.

        The texts are scored together, which costs less than one call of `detect` each.
        """
        answers = {text: self._answers.get(text) for text in texts}
        unknown = [text for text, answer in answers.items() if answer is None]
        if unknown:
            if len(self._answers) + len(unknown) > CACHED_TEXTS:
                self._answers.clear()
            for text, answer in zip(unknown, self._answer(unknown), strict=True):
                answers[text] = self._answers[text] = answer
        return [_fresh(answers[text]) for text in texts]

    def _answer(self, texts: list[str]) -> list[str | LanguageDetectionError]:
        limit = self._max_chars
        heads = [_head(text, limit) if limit and len(text) > limit else text for text in texts]
        answers = self._detect(heads)
        again = [
            index
            for index, answer in enumerate(answers)
            if isinstance(answer, LanguageDetectionError) and heads[index] is not texts[index]
        ]
        if again:
            for index, answer in zip(again, self._detect([texts[i] for i in again]), strict=True):
                answers[index] = answer
        return answers

    def _detect(self, texts: list[str]) -> list[str | LanguageDetectionError]:
        answers: list[str | LanguageDetectionError] = []
        scored: list[int] = []
        for index, text in enumerate(texts):
            if not text.strip():
                answers.append(LanguageDetectionError("the text is empty"))
            elif not any(char.isalpha() for char in text):
                answers.append(LanguageDetectionError("the text has no letters"))
            else:
                answers.append("")
                scored.append(index)
        best = self._scorer.best([texts[index] for index in scored]) if scored else []
        for index, language in zip(scored, best, strict=True):
            if language is None:
                answers[index] = LanguageDetectionError(
                    "the model finds no language feature in the text"
                )
            elif language == _NO_LANGUAGE:
                answers[index] = LanguageDetectionError(
                    "the model finds no linguistic content in the text"
                )
            else:
                answers[index] = language
        return answers


def _fresh(answer: str | LanguageDetectionError | None) -> str | LanguageDetectionError:
    """A remembered answer, with a remembered error as a new one (raised without the
    traceback of an earlier raise)."""
    assert answer is not None
    if isinstance(answer, LanguageDetectionError):
        return LanguageDetectionError(*answer.args)
    return answer


class _Scorer:
    """The best label of `LanguageIdentifier.rank` (normalized scores), for many texts at once.

    It reads the identifier's model arrays and repeats py3langid 0.4's scoring step by step
    (`_encode`, `_decide`, `rank`), so that every answer is the one `rank` gives. The byte
    walk is not walked: the model's automaton is an Aho–Corasick automaton over strings of
    at most `_DEPTH` bytes, so its state after a byte is the one it reaches from its start
    over the last `_DEPTH` bytes alone, and that holds for every byte of every text at once
    in `_DEPTH` numpy gathers. A `_RESET` byte, which leads every state back to the start,
    keeps the texts of one batch apart.
    """

    def __init__(self, identifier: LanguageIdentifier) -> None:
        import numpy as np

        self._np = np
        self._classes: list[str] = list(identifier.nb_classes)
        # the same values, laid out for fast row gathers: numpy widens float16 to float32
        # before it multiplies anyway
        self._ptc: Any = np.ascontiguousarray(identifier.nb_ptc, dtype=np.float32)
        self._pc: Any = identifier.nb_pc
        self._nextmove: Any = np.frombuffer(identifier.tk_nextmove, dtype=np.uint32)
        self._rowbase: Any = np.asarray(identifier.tk_row, dtype=np.intp) << 8
        self._output: Any = np.asarray(identifier.tk_output, dtype=np.intp)
        # the row of the state that each pair of bytes leads to from the start: the first
        # two steps of every window in one gather
        self._row_of: Any = self._rowbase.astype(np.uint32)
        start = self._rowbase[self._nextmove[self._rowbase[0] : self._rowbase[0] + 256]]
        pairs = (start[:, None] + np.arange(256)).ravel()
        self._second_row: Any = self._row_of[self._nextmove[pairs]]
        resets = self._nextmove[self._rowbase[:, None] + _RESET] == 0
        if not resets.all() or self._output[0] >= 0:
            raise RuntimeError(f"byte {_RESET} does not reset the walk of py3langid's model")
        first: dict[str, int] = {}
        self._aliases: list[tuple[int, int]] = []
        for index, label in enumerate(self._classes):
            if label in first:
                self._aliases.append((first[label], index))
            else:
                first[label] = index
        self._feature_count = int(self._output.max()) + 1
        self._featureless = self._scores(b"")

    def best(self, texts: Sequence[str]) -> list[str | None]:
        """The label `rank(text)` puts first for each text, or None when the text scores as
        the empty text does (no feature of the model in it)."""
        encoded = [
            unicodedata.normalize("NFC", text.lower() if text.isupper() else text).encode(
                "utf8", errors="surrogatepass"
            )
            for text in texts
        ]
        scores = self._scores_many(encoded)
        featureless = (scores == self._featureless).all(axis=1).tolist()
        # rank sorts the labels by score, stably: the first of the best comes first
        best = scores.argmax(axis=1).tolist()
        return [
            None if none else self._classes[index]
            for none, index in zip(featureless, best, strict=True)
        ]

    def _scores(self, data: bytes) -> Any:
        """The scores of `LanguageIdentifier._decide` for one encoded text."""
        return self._scores_many([data])[0]

    def _scores_many(self, datas: Sequence[bytes]) -> Any:
        """The scores of `_decide` for each text, a row each, every row the bits of `_decide`.

        Everything but the one product of a text's feature weights with the model's rows is
        done for all the texts at once: each step works element by element, or along a row,
        as `_decide` does on a text alone.
        """
        np = self._np
        features, counts, bounds = self._features(datas)
        weights = np.log1p(counts)
        scores = np.zeros((len(datas), len(self._classes)), dtype=np.float32)
        ptc = self._ptc
        edges = bounds.tolist()
        for row, (begin, end) in enumerate(itertools.pairwise(edges)):
            if begin < end:
                scores[row] = weights[begin:end] @ ptc[features[begin:end]]
        found = bounds[1:] > bounds[:-1]
        scores[found] += self._pc
        lengths = np.fromiter(map(len, datas), dtype=np.float64, count=len(datas))
        scores *= (1.0 / np.sqrt(np.maximum(lengths, 1.0))).astype(np.float32)[:, None]
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        for kept, dropped in self._aliases:
            scores[:, kept] += scores[:, dropped]
            scores[:, dropped] = 0.0
        return scores

    def _features(self, datas: Sequence[bytes]) -> tuple[Any, Any, Any]:
        """The model's features the byte walk meets in each text, in the order it first
        meets them, and how often it meets each (float32, as `rank` counts them): flat
        arrays of features and counts, and `bounds`, where text i has those from
        `bounds[i]` to `bounds[i + 1]`."""
        np = self._np
        reset = bytes([_RESET])
        # window i, joined[i : i + _DEPTH], ends with byte i of the texts joined by resets:
        # the walk is in the state after that byte that the window leads to from the start
        joined = np.frombuffer(reset * (_DEPTH - 1) + reset.join(datas), dtype=np.uint8)
        size = len(joined) - _DEPTH + 1
        pairs = (joined[:size].astype(np.intp) << 8) | joined[1 : size + 1]
        row = self._second_row[pairs]
        for step in range(2, _DEPTH - 1):
            row = self._row_of[self._nextmove[row + joined[step : step + size]]]
        state = self._nextmove[row + joined[_DEPTH - 1 :]]
        met = self._output[state]
        at = np.flatnonzero(met >= 0)
        lengths = np.fromiter(map(len, datas), dtype=np.intp, count=len(datas))
        # the position of each text's first byte; the resets between them meet no feature
        starts = np.cumsum(lengths + 1) - lengths - 1
        text = np.searchsorted(starts, at, side="right") - 1
        keys = text * self._feature_count + met[at]
        unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
        order = np.argsort(first)
        keys = unique[order]
        features = keys % self._feature_count
        bounds = np.searchsorted(keys // self._feature_count, np.arange(len(datas) + 1))
        return features, counts[order].astype(np.float32), bounds


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

    def detect_many(self, texts: Sequence[str]) -> list[str | LanguageDetectionError]:
        return self._loaded().detect_many(texts)
