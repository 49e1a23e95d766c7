"""BM25 over the corpus units, with Dutch tokenization and a boost for named articles.

The reference assistant needs retrieval that is cheap, deterministic and good enough to
answer plain questions about the bundled articles. Okapi BM25 over bags of words is all
that takes; the boost for an explicit mention ("artikel 6:7 Awb") stands in for the exact
lookup that a real legal assistant does when a user names the article.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from soev_pipeline.corpus import CorpusUnit

_STOPWORDS = """
    aan al alle als ben bij binnen dan dat de deze die dit door een en er geen had heb heeft
    het hij hoe hoeveel hun ik iemand in is je kan kunnen maar me men met mij mijn moet mag
    na naar niet nog nu of om ook op over te tegen ten tot u uit uw van veel voor waarom
    wanneer wat wel welk welke wie wij wil word wordt worden ze zich zij zijn zo zou maken
    maak maakt doen gaan krijg krijgen zeggen zegt geldt gelden
"""
STOPWORDS = frozenset(_STOPWORDS.split())

_WORD = re.compile(r"\d+(?::\d+)?[a-z]?|[a-z]+")
_LABEL = re.compile(
    r"\b(\d+:\d+[a-z]?)\b|\b(?:artikel|art\.?)\s*(\d+[a-z]?)(?![\w:])", re.IGNORECASE
)
_SUFFIXES = ("en", "s", "e")

# The shortest part of a compound that counts as a word, and the prefix that matches an
# unknown word to corpus words.
_PART = 4
_PREFIX = 7

# What a named article adds to a unit's score: more than any plain BM25 match reaches.
MENTION_BOOST = 25.0


def fold(text: str) -> str:
    """Lower-case `text` and drop diacritics, so "beëindiging" matches "beeindiging"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _stem(word: str) -> str:
    """Strip one common inflection ending, so "termijnen" and "termijn" meet."""
    if word.isdigit() or ":" in word:
        return word
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    """The index terms of `text`: folded words and article labels, without stopwords.

    Punctuation splits words, except the colon inside an article label such as `6:162`,
    which stays one term.
    """
    return [_stem(word) for word in _WORD.findall(fold(text)) if word not in STOPWORDS]


def mentioned_labels(text: str) -> set[str]:
    """The article labels that `text` names: `6:7` anywhere, `10` after "artikel" or "art."."""
    labels: set[str] = set()
    for match in _LABEL.finditer(text):
        labels.add((match.group(1) or match.group(2)).lower())
    return labels


def _names(unit: CorpusUnit) -> list[str]:
    return [name for name in (unit.law, *unit.aliases) if name]


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved unit and its score."""

    unit: CorpusUnit
    score: float


class Retriever:
    """Okapi BM25 over the units' text, law names, aliases and article labels.

    A term counts once per unit: the units are short, and a word a unit repeats says
    little more about what it is for. So each matching term adds its idf times
    `(k1 + 1) / (1 + k1 * (1 - b + b * length / mean length))`.

    Args:
        units: the corpus units to index.
        k1: how far a long unit's length damps a match.
        b: how much the unit's length counts against the mean length.
    """

    def __init__(self, units: Iterable[CorpusUnit], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.units: tuple[CorpusUnit, ...] = tuple(units)
        words_of_units = []
        for unit in self.units:
            words = tokenize(unit.text)
            for name in _names(unit):
                words += tokenize(name)
            if unit.article:
                words.append(fold(unit.article))
            words_of_units.append(words)
        self._vocabulary = frozenset(word for words in words_of_units for word in words)
        expanded = [self._expand(words) for words in words_of_units]
        self._terms = [frozenset(words) for words in expanded]
        lengths = [len(words) for words in expanded]
        mean = sum(lengths) / len(lengths) if lengths else 1.0
        self._weights = [(k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * n / mean)) for n in lengths]
        frequency: Counter[str] = Counter()
        for terms in self._terms:
            frequency.update(terms)
        count = len(self.units)
        self._idf = {
            term: math.log(1.0 + (count - df + 0.5) / (df + 0.5)) for term, df in frequency.items()
        }

    def _expand(self, words: Iterable[str]) -> list[str]:
        """`words` with the corpus words inside each compound: "bezwaarschrift" adds "bezwaar".

        Dutch writes compounds as one word, so "bezwaartermijn" in a question would
        otherwise never meet "bezwaar" and "termijn" in a unit.
        """
        expanded = []
        for word in words:
            expanded.append(word)
            if len(word) < 2 * _PART + 1 or not word.isalpha():
                continue
            for cut in range(_PART, len(word) - _PART + 1):
                expanded += [part for part in (word[:cut], word[cut:]) if part in self._vocabulary]
        return expanded

    def _query_terms(self, query: str) -> set[str]:
        """The terms of `query`, with compounds split and unknown long words matched by prefix.

        A word the corpus lacks, such as "discrimineren", is matched to the corpus words
        that share its first `_PREFIX` letters ("discriminatie").
        """
        terms = set(self._expand(tokenize(query)))
        for term in list(terms):
            if term not in self._vocabulary and len(term) >= _PREFIX and term.isalpha():
                terms.update(word for word in self._vocabulary if word[:_PREFIX] == term[:_PREFIX])
        return terms

    def score(self, query: str) -> list[float]:
        """The BM25 score of every unit for `query`, in unit order, with the mention boost."""
        terms = self._query_terms(query)
        scores = [
            weight * sum(self._idf[term] for term in terms & terms_of_unit)
            for terms_of_unit, weight in zip(self._terms, self._weights, strict=True)
        ]
        for index in self._mentioned(query):
            scores[index] += MENTION_BOOST
        return scores

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """The `k` best units for `query` with a score above zero, best first."""
        ranked = sorted(
            ((score, index) for index, score in enumerate(self.score(query)) if score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [Hit(self.units[index], score) for score, index in ranked[:k]]

    def _mentioned(self, query: str) -> Sequence[int]:
        """The units that `query` names by article label.

        When several laws have an article of that label, the ones whose law name or alias
        the query also holds win; when the query names none of them, all of them count.
        """
        labels = mentioned_labels(query)
        if not labels:
            return []
        words = set(_WORD.findall(fold(query)))
        chosen: list[int] = []
        for label in labels:
            candidates = [
                index
                for index, unit in enumerate(self.units)
                if unit.article is not None and unit.article.lower() == label
            ]
            named = [
                index
                for index in candidates
                if any(
                    set(_WORD.findall(fold(name))) <= words for name in _names(self.units[index])
                )
            ]
            chosen += named or candidates
        return chosen
