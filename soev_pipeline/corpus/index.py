"""The quote index: which corpus unit holds a quoted span, without scanning the corpus.

A corpus holds tens of thousands of units and hundreds of MB of text, and a run grades
thousands of replies, so a quote is never searched unit by unit. The index maps every
word and every pair of adjacent words of the normalized corpus text to the units that
hold it: an inverted index in three numpy arrays, about 4 bytes per distinct term of a
unit and 16 bytes per distinct term of the corpus. The terms of a quote give one or a
few candidate units, and only those are searched for the quote itself.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported when an index is built: a tenth of a second
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]

_WORD = re.compile(r"\w+")
_ELLIPSIS = re.compile(r"\[\s*\.{3,}\s*\]|\(\s*\.{3,}\s*\)|\.{3,}")
_EDGE = " .,;:!?'\"()[]-"
_TYPOGRAPHY = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4`", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00ad\u200b\u200c\u200d\u2060\ufeff", None),
    }
)


def normalize_text(text: str) -> str:
    """Normalize `text` for verbatim comparison.

    Differences that a reader does not see as a different wording are removed: Unicode
    compatibility forms (NFKC: a non-breaking space is a space, `…` is `...`), typographic
    quotes and dashes (`’` is `'`, `“` is `"`, `–` and `—` are `-`), soft hyphens and
    zero-width characters, letter case, and runs of whitespace (one space).
    """
    return " ".join(_folded(text).split())


def _folded(text: str) -> str:
    """`text` in compatibility form, with plain quotes and dashes, case-folded.

    ASCII text is its own compatibility form and its one typographic mark is the
    backtick, so lowering its case and plain quotes are all there is to do (the common
    case, and several times cheaper).
    """
    if text.isascii():
        return text.lower().replace("`", "'")
    return unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHY).casefold()


_ASCII_WORDS = str.maketrans(
    {
        **{chr(code): " " for code in range(128) if not _WORD.fullmatch(chr(code))},
        **{chr(code): chr(code).lower() for code in range(ord("A"), ord("Z") + 1)},
    }
)
"""Lowercase for an ASCII letter, a space for an ASCII character that no word holds."""


def _words(text: str) -> list[str]:
    """The words of `text` once normalized, in order: what the index holds of it.

    In ASCII text a word is a run of letters, digits and underscores, so one translation
    (to lowercase, every other character to a space) and a split find them, in half the
    time of the pattern.
    """
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _WORD.findall(_folded(text))


def quote_fragments(quote: str) -> tuple[str, ...]:
    """The normalized fragments of a quoted span, in order.

    An ellipsis (`...`, `…`, `[...]`, `(...)`) marks left-out text, so it splits the quote
    into fragments. Punctuation and spaces at the edges of a fragment are dropped (a
    quote often takes the sentence's full stop along), and fragments without a letter or
    digit are left out.
    """
    pieces = (piece.strip(_EDGE) for piece in _ELLIPSIS.split(normalize_text(quote)))
    return tuple(piece for piece in pieces if _WORD.search(piece))


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _find_bounded(text: str, fragment: str, start: int) -> int:
    """Where `fragment` first occurs in `text` from `start` on word boundaries, or -1.

    A boundary is needed only where the fragment's own edge is a letter or digit: a
    fragment that ends in `-` may run on into a word.
    """
    head, tail = _is_word(fragment[0]), _is_word(fragment[-1])
    while (at := text.find(fragment, start)) >= 0:
        end = at + len(fragment)
        if not (head and at > 0 and _is_word(text[at - 1])) and not (
            tail and end < len(text) and _is_word(text[end])
        ):
            return at
        start = at + 1
    return -1


def holds(text: str, fragments: Sequence[str]) -> bool:
    """Whether the normalized `text` holds `fragments` in order, each on word boundaries."""
    at = 0
    for fragment in fragments:
        found = _find_bounded(text, fragment, at)
        if found < 0:
            return False
        at = found + len(fragment)
    return True


_PAIR = 0x9E3779B97F4A7C15 - (1 << 64)
"""The odd multiplier that combines the hashes of two adjacent words into the pair's."""


def _pair_hash(first: int, second: int) -> int:
    """The term of a word pair: the low bits that `QuoteIndex` keeps are those of the same
    sum of products in wrapping 64-bit arithmetic, which is how `_block_pairs` makes it."""
    return first * _PAIR + second


def _query_terms(fragment: str) -> set[int]:
    """The hashes that a unit holding `fragment` must have: its word pairs, or its one word."""
    words = [hash(token) for token in _WORD.findall(fragment)]
    if len(words) == 1:
        return set(words)
    return {_pair_hash(first, second) for first, second in pairwise(words)}


NORMALIZED_UNITS = 1024
"""The most normalized unit texts a `QuoteIndex` keeps; past it, it starts afresh."""
_BLOCK = 4096
"""Units indexed at a time by `QuoteIndex.build`."""


def _block_pairs(
    texts: Sequence[str], first: int, end: int, unit_bits: int, hash_mask: int
) -> IntArray:
    """The sorted, distinct (term, unit) pairs of `texts[first:end]`, packed as in `build`.

    Only the words are hashed one by one; the terms of the word pairs are computed from
    them with numpy, for the whole block at once.
    """
    import numpy as np

    hashes = array("q")
    counts = array("q")
    for text in texts[first:end]:
        tokens = _words(text)
        hashes.extend(map(hash, tokens))
        counts.append(len(tokens))
    if not hashes:
        return np.zeros(0, np.int64)
    words = np.frombuffer(hashes, dtype=np.int64)
    owners = np.repeat(np.arange(first, end, dtype=np.int64), np.frombuffer(counts, np.int64))
    del counts
    within = owners[:-1] == owners[1:]  # a pair that does not run from one unit into the next
    pairs = words[:-1] * np.int64(_PAIR) + words[1:]
    terms = np.concatenate((words, pairs[within]))
    del pairs, words
    terms &= hash_mask
    terms <<= unit_bits
    terms |= np.concatenate((owners, owners[:-1][within]))
    del owners, within
    terms.sort()
    keep = np.empty(len(terms), dtype=bool)
    keep[0] = True
    np.not_equal(terms[1:], terms[:-1], out=keep[1:])
    return terms[keep]


class QuoteIndex:
    """Finds the corpus unit that holds a quote.

    A quote is held by a unit when each of its fragments occurs in the unit's normalized
    text (`normalize_text`), in order, starting and ending on word boundaries: a quote
    that cuts a word in two (`"zes wek"`) is not verbatim. The words of a held fragment
    are then whole, adjacent words of the unit, which is what the index looks up: every
    word, and every pair of adjacent words, of every unit. Pairs matter: a quote made of
    common words (a paraphrase) has common words, but rarely common pairs.

    Build it once per corpus with `QuoteIndex.build` (the corpus lookup does this through
    `CorpusLookup.quote_index`); `find` then costs a few array look-ups and a check of
    the text of one or a few units.
    """

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        keys: IntArray,
        starts: IntArray,
        postings: npt.NDArray[np.int32],
        hash_mask: int,
    ) -> None:
        self._ids = ids
        self._unit_texts = texts
        self._keys = keys
        self._starts = starts
        self._postings = postings
        self._hash_mask = hash_mask
        self._texts: dict[int, str] = {}
        """The normalized texts of the units that `find` checked: a quote that comes back
        (the attempts of a case quote the same articles) is checked against the same units."""

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> QuoteIndex:
        """Index the words and word pairs of the units with `ids` and `texts`, in one pass.

        Each (term, unit) pair is packed into one 63-bit integer: the low bits hold the
        unit's position, the high bits a hash of the term. One in-place sort of those
        integers groups the units of each term, in unit order. Two terms with the same
        hash share a key: that only adds candidates, and `find` checks every candidate
        against the text, so it stays exact.
        """
        import numpy as np

        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} unit ids, but {len(texts)} texts")
        unit_bits = max(1, (len(ids) - 1).bit_length())
        hash_mask = (1 << (63 - unit_bits)) - 1
        # a block of units at a time, each block's pairs sorted and without repeats, so
        # that the repeats of a unit never sit in memory all at once
        blocks = [
            _block_pairs(texts, first, min(first + _BLOCK, len(ids)), unit_bits, hash_mask)
            for first in range(0, len(ids), _BLOCK)
        ]
        pairs = np.concatenate(blocks) if blocks else np.zeros(0, np.int64)
        del blocks
        pairs.sort(kind="stable")  # the blocks are sorted runs: a merge
        postings = (pairs & ((1 << unit_bits) - 1)).astype(np.int32)
        pairs >>= unit_bits  # the term of each pair
        if len(pairs):
            starts = np.flatnonzero(pairs[1:] != pairs[:-1])
            starts += 1
            starts = np.concatenate(([0], starts, [len(pairs)])).astype(np.int64)
            keys = pairs[starts[:-1]]
        else:
            starts, keys = np.zeros(1, np.int64), np.zeros(0, np.int64)
        del pairs
        return cls(ids, texts, np.ascontiguousarray(keys), starts, postings, hash_mask)

    @property
    def nbytes(self) -> int:
        """The memory of the index arrays, in bytes (the unit texts are shared with the lookup)."""
        return int(self._keys.nbytes + self._starts.nbytes + self._postings.nbytes)

    def _units_with(self, term: int) -> npt.NDArray[np.int32]:
        key = term & self._hash_mask
        index = int(self._keys.searchsorted(key))
        if index == len(self._keys) or int(self._keys[index]) != key:
            return self._postings[:0]
        return self._postings[self._starts[index] : self._starts[index + 1]]

    def candidates(self, fragments: Sequence[str]) -> list[int]:
        """The positions of the units that hold every term of `fragments`, in unit order.

        The shortest list of units comes first; intersecting one more list (a binary
        search per candidate) costs far less than checking one more candidate's text, so
        intersection goes on until one candidate is left.
        """
        terms = set().union(*(_query_terms(fragment) for fragment in fragments))
        lists = sorted((self._units_with(term) for term in terms), key=len)
        if not lists or not len(lists[0]):
            return []
        found = lists[0]
        for other in lists[1:]:
            if len(found) <= 1:
                break
            at = other.searchsorted(found)
            at[at == len(other)] = 0
            found = found[other[at] == found]
            if not len(found):
                return []
        return [int(position) for position in found]

    def find(self, quote: str) -> str | None:
        """The id of a unit that holds `quote`, or None; a quote without words finds nothing."""
        fragments = quote_fragments(quote)
        if not fragments:
            return None
        for position in self.candidates(fragments):
            if holds(self._normalized(position), fragments):
                return self._ids[position]
        return None

    def _normalized(self, position: int) -> str:
        text = self._texts.get(position)
        if text is None:
            if len(self._texts) >= NORMALIZED_UNITS:
                self._texts.clear()
            text = self._texts[position] = normalize_text(self._unit_texts[position])
        return text
