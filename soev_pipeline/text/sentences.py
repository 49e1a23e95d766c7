"""Split a reply into sentences, without breaking Dutch legal abbreviations and labels.

A generic splitter cuts "Volgens art. 6:162 BW is ..." after "art." and "Neem o.a. contact
op" after "o.a.", and gives the language detector fragments it cannot read. This splitter
cuts at a sentence-final mark only when the next sentence starts like one, and knows the
abbreviations of Dutch legal writing. Chat replies are often Markdown, so paragraphs, list
items, headings and table rows are blocks of their own.
"""

from __future__ import annotations

import functools
import re

# Abbreviations that are followed by a noun, a name or a number inside a sentence: a period
# after one never ends the sentence, whatever comes next.
_NEVER_FINAL = frozenset(
    """
    art. artt. nr. nrs. no. jo. mr. dhr. mevr. mw. drs. dr. ir. ing. prof. bijv. bv. vgl.
    zgn. ca. blz. pag. p. pp. resp. incl. excl. jl. par. hfst. a.s. t.a.v. m.b.t. i.v.m.
    o.a. i.p.v. n.a.v. t.o.v. z.g.n. d.w.z. m.n. o.g.v. i.c. c.q. e.v. e.g. i.e. cf. vs.
    """.split()  # noqa: SIM905
)
# Abbreviations that often close a sentence: a period after one ends the sentence when the
# next word starts with a capital.
_MAYBE_FINAL = frozenset("e.d. e.a. enz. etc. z.s.m. e.o. a.u.b. s.v.p.".split())  # noqa: SIM905

# Short names of laws written in mixed case; the all-capital ones ("BW") are acronyms anyway.
_LAW_NAMES = frozenset(
    "Awb Sr Sv Rv Fw Wvw Wft Wmo Wlz Zvw Pw Vw Aw Ow Bw Wbp Avg Wob Woo Wjz Wkb".split()  # noqa: SIM905
)

_INITIAL = re.compile(r"[A-Z]\.")
_DOTTED = re.compile(r"(?:[^\W\d_]{1,3}\.){2,}")
# A sentence-final mark, any closing quotes or brackets, then the whitespace after them.
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s)")
_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s+|\d{1,3}[.)]\s+|#{1,6}\s+|>\s*|\|)")
_MARKUP = re.compile(r"^\s*(?:[-*+•]\s+|\d{1,3}[.)]\s+|#{1,6}\s+|>\s*)+")
_LETTER_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_EDGE_PUNCTUATION = "\"'“”‘’«»()[]{}*_`.,;:!?…"
_EDGE_PUNCTUATION_NO_PERIOD = _EDGE_PUNCTUATION.replace(".", "")


def split_sentences(text: str) -> list[str]:
    """Return the sentences of `text`, stripped, in order, without Markdown list markers.

    Blank lines, list items, headings, quotes and table rows start a new block; the other
    line breaks of a paragraph are spaces. Inside a block, a ".", "!", "?" or "…" followed
    by whitespace ends a sentence, except where the period belongs to an abbreviation
    ("art.", "o.a.", "mr."), an initial ("J. de Vries") or a number inside a sentence
    ("lid 2. van"): a sentence never starts with a lower-case letter.

    Args:
        text: the reply.

    Returns:
        The nonblank sentences.
    """
    sentences: list[str] = []
    for block in _blocks(text):
        sentences.extend(_split_block(block))
    return sentences


def letter_words(sentence: str, first: int | None = None) -> list[str]:
    """Return the words of `sentence` that are language: letters only, no abbreviations.

    A word may hold an inner hyphen or apostrophe ("zzp'ers", "ex-werknemer"). Numbers,
    article labels ("6:162"), abbreviations ("art.", "o.a."), the short names of laws
    ("Awb", "Sr"), identifiers ("BWBR0005537/artikel-6:7") and acronyms in capitals of two
    or more letters ("BW", "UWV") are no evidence of a language, so they are left out:
    "Conform art. 8:1 Awb." has one word. With `first`, only the first `first` words are
    looked for: enough to tell whether a sentence has that many.
    """
    if first is None:
        return [word for token in sentence.split() if (word := _letter_word(token))]
    words: list[str] = []
    for token in sentence.split():
        if len(words) >= first:
            break
        if word := _letter_word(token):
            words.append(word)
    return words


@functools.lru_cache(maxsize=8192)
def _letter_word(token: str) -> str | None:
    """The word of language that `token` is, or None (see `letter_words`); remembered,
    since replies repeat their words."""
    core = token.strip(_EDGE_PUNCTUATION_NO_PERIOD)
    folded = core.casefold()
    if folded in _NEVER_FINAL or folded in _MAYBE_FINAL:
        return None
    word = core.strip(_EDGE_PUNCTUATION)
    if word in _LAW_NAMES or (len(word) > 1 and word.isupper()):
        return None
    return word if _LETTER_WORD.fullmatch(word) else None


def _blocks(text: str) -> list[str]:
    """Cut `text` at blank lines and before each line that starts a Markdown block."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or _BLOCK_START.match(line):
            if current:
                blocks.append(" ".join(current))
            current = []
        if line.strip():
            current.append(_MARKUP.sub("", line).strip())
    if current:
        blocks.append(" ".join(current))
    return [block for block in blocks if block]


def _split_block(block: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(block):
        if _ends_sentence(block, match):
            sentences.append(block[start : match.end()].strip())
            start = match.end()
    sentences.append(block[start:].strip())
    return [sentence for sentence in sentences if sentence]


def _ends_sentence(block: str, match: re.Match[str]) -> bool:
    """Decide whether the mark of `match` ends a sentence, from the words around it."""
    following = block[match.end() :].lstrip()
    if not following:
        return True
    if following[0].islower():
        return False
    marks = match.group().rstrip("\"'”’»)]")
    if marks != ".":
        return True
    before = block[: match.start() + 1].rsplit(None, 1)[-1].lstrip("(\"'“‘«[")
    word = before.casefold()
    if word in _NEVER_FINAL or _INITIAL.fullmatch(before):
        return False
    if word in _MAYBE_FINAL:
        return True
    return not _DOTTED.fullmatch(before)
