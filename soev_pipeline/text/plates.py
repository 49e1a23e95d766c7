"""Find Dutch licence plates by the sidecode table.

A Dutch plate is one of fourteen patterns ("sidecodes") of letter and digit groups, such as
XX-99-99 or 99-XXX-9. The letters are consonants without C and Q, and a few combinations
are never issued. There is no check digit, so the hyphens are the evidence: a plate
written without them ("GBX12T") counts only right after a word such as "kenteken".

Every sidecode has six letters and digits, so a plate is a whole token of eight characters
with two hyphens or six without. One scan finds every such token, and its shape (letters
as X, digits as 9) names its sidecode: a dictionary lookup instead of a scan per sidecode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .proximity import near

SIDECODES = (
    "XX-99-99",
    "99-99-XX",
    "99-XX-99",
    "XX-99-XX",
    "XX-XX-99",
    "99-XX-XX",
    "99-XXX-9",
    "9-XXX-99",
    "XX-999-X",
    "X-999-XX",
    "XXX-99-X",
    "X-99-XXX",
    "9-XX-999",
    "999-XX-9",
)
"""The sidecodes 1 to 14, in order: X is a letter, 9 a digit."""

_LETTERS = "BDFGHJKLMNPRSTVXZ"
_NEVER_ISSUED = frozenset(
    {"SS", "SD", "SA", "GVD", "KKK", "NSB", "PKK", "PSV", "TBS", "PVV", "SGP", "VVD"}
)
_PLATE_WORDS = re.compile(r"\bkenteken|\bnummerplaat|\blicen[cs]e plate", re.IGNORECASE)

# A whole token (nothing of a word or a hyphen on either side) of plate letters, digits
# and hyphens, six to eight long. The pattern starts with a character class so that the
# search skips ahead quickly; the look-behind after the first character checks the one
# before it.
_CANDIDATE = re.compile(rf"[{_LETTERS}\d](?<![\w-].)[{_LETTERS}\d-]{{5,7}}(?![\w-])")
_SIDECODE_OF_SHAPE = {
    shape: sidecode for sidecode in SIDECODES for shape in (sidecode, sidecode.replace("-", ""))
}


def find_license_plates(text: str) -> Iterator[tuple[int, int]]:
    """Yield the span of each plate, in text order.

    A plate with hyphens counts anywhere, one without only just after a keyword.
    """
    for match in _CANDIDATE.finditer(text):
        token = match.group()
        sidecode = _SIDECODE_OF_SHAPE.get("".join(map(_shape, token)))
        if sidecode is None:
            continue
        if "-" not in token and not near(text, match.start(), _PLATE_WORDS):
            continue
        if _issued(token.replace("-", ""), sidecode):
            yield match.span()


def _shape(char: str) -> str:
    return "X" if char in _LETTERS else "-" if char == "-" else "9"


def _issued(characters: str, sidecode: str) -> bool:
    """False when a letter group is a combination that is never issued."""
    start = 0
    for group in sidecode.split("-"):
        if characters[start : start + len(group)] in _NEVER_ISSUED:
            return False
        start += len(group)
    return True
