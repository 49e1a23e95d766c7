"""Project messages: normalization, and which message a reply holds."""

from __future__ import annotations

import re
from collections.abc import Mapping

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Case-fold `text` and collapse every run of whitespace to one space."""
    return _SPACE.sub(" ", text).strip().casefold()


def refusal_code(reply: str | None, messages: Mapping[str, str]) -> str | None:
    """Return the code of the project message that `reply` holds, or None.

    The reply holds a message when the normalized message is a substring of the normalized
    reply. When it holds several, the longest message wins, then the first code.
    """
    if not reply:
        return None
    text = normalize(reply)
    found = [
        (len(normalized), code)
        for code, message in messages.items()
        if (normalized := normalize(message)) and normalized in text
    ]
    if not found:
        return None
    longest = max(length for length, _ in found)
    return next(code for length, code in found if length == longest)
