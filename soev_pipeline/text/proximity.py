"""Whether a keyword stands just before a place in a text, in the same sentence."""

from __future__ import annotations

import re

# A sentence ends at "!", "?", a line break, or a period before a capital ("geb. 12-03"
# and "o.a. de" go on).
_SENTENCE_END = re.compile(r"[!?\n]|\.\s+(?=[A-Z])")


def near(text: str, start: int, keywords: re.Pattern[str], reach: int = 40) -> bool:
    """Say whether `keywords` match in the `reach` characters before `start`.

    Kinds that look like many ordinary tokens (a date, an 8-digit number, a document
    number) count as personal data only when the same sentence says what they are just
    before them, so the window stops at the end of the previous sentence.
    """
    window = text[max(0, start - reach) : start]
    ends = list(_SENTENCE_END.finditer(window))
    if ends:
        window = window[ends[-1].end() :]
    return keywords.search(window) is not None


def holds_any(text: str, words: tuple[str, ...]) -> bool:
    """Say whether `text` holds one of `words` (lowercase), ignoring case as `re` does.

    A cheap test before a scan whose every find needs a keyword `near` it: when each match
    of the keyword pattern holds one of `words`, a text holding none of them has no find.
    Case is folded as `re.IGNORECASE` folds it: besides the ordinary case pairs, `re` lets
    "ı" and "İ" match "i", "ſ" match "s" and the Kelvin sign match "k".
    """
    folded = text.casefold()
    if "\u0131" in folded or "\u0307" in folded:
        folded = folded.replace("\u0131", "i").replace("\u0307", "")
    return any(word in folded for word in words)
