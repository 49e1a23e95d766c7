"""Cut a text to a length, marking the cut with an ellipsis.

Failure details, verdict details and quotes in a reply show user text only briefly: test
cases are secret, evidence and report lines should stay small, and a reader needs to see
that text was left out.
"""

from __future__ import annotations

ELLIPSIS = "…"


def shorten(text: str, limit: int, *, flatten: bool = False, at_word: bool = False) -> str:
    """Return `text` when it has at most `limit` characters, else its start and an ellipsis.

    By default the cut keeps the first `limit - 1` characters as they are and adds "…",
    so the result has at most `limit` characters.

    Args:
        text: the text to shorten.
        limit: the longest text that is returned whole; at least 1.
        flatten: first collapse every run of whitespace, line breaks included, to one
            space, and end a cut on a word, not on a space: for a detail that must stay
            one line.
        at_word: cut after the last whole word within the first `limit` characters, drop
            a `,`, `;` or `:` left at the end, and add " …", as a quotation in prose does.
            The ellipsis comes on top of the `limit` characters.

    Raises:
        ValueError: `limit` is less than 1.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if flatten:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if at_word:
        return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " " + ELLIPSIS
    cut = text[: limit - 1]
    return (cut.rstrip() if flatten else cut) + ELLIPSIS
