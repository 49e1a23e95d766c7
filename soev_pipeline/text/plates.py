"""Find Dutch licence plates by the sidecode table.

A Dutch plate is one of fourteen patterns ("sidecodes") of letter and digit groups, such as
XX-99-99 or 99-XXX-9. The letters are consonants without C and Q, and a few combinations
are never issued. There is no check digit, so the hyphens are the evidence: a plate
written without them ("GBX12T") counts only right after a word such as "kenteken".
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

_LETTER = "[BDFGHJKLMNPRSTVXZ]"
_NEVER_ISSUED = frozenset(
    {"SS", "SD", "SA", "GVD", "KKK", "NSB", "PKK", "PSV", "TBS", "PVV", "SGP", "VVD"}
)
_PLATE_WORDS = re.compile(r"\bkenteken|\bnummerplaat|\blicen[cs]e plate", re.IGNORECASE)


def _compile(sidecode: str, separator: str) -> re.Pattern[str]:
    """The pattern of one sidecode, with each group captured."""
    groups = []
    for group in sidecode.split("-"):
        unit = _LETTER if group[0] == "X" else r"\d"
        groups.append(f"({unit}{{{len(group)}}})")
    return re.compile(rf"(?<![\w-]){separator.join(groups)}(?![\w-])")


_HYPHENATED = tuple(_compile(sidecode, "-") for sidecode in SIDECODES)
_BARE = tuple(_compile(sidecode, "") for sidecode in SIDECODES)


def find_license_plates(text: str) -> Iterator[tuple[int, int]]:
    """Yield the span of each plate: hyphenated anywhere, without hyphens after a keyword."""
    for pattern in _HYPHENATED:
        for match in pattern.finditer(text):
            if _issued(match):
                yield match.span()
    for pattern in _BARE:
        for match in pattern.finditer(text):
            if near(text, match.start(), _PLATE_WORDS) and _issued(match):
                yield match.span()


def _issued(match: re.Match[str]) -> bool:
    """False when a letter group is a combination that is never issued."""
    return not any(group in _NEVER_ISSUED for group in match.groups())
