"""Find dates of birth: a real calendar date just after a word that says it is one.

A reply about law is full of dates (of a judgment, a deadline, an entry into force), and
none of those is personal. A date is a birth date only when a birth keyword ("geboren",
"geboortedatum", "geb.", "date of birth") stands just before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

from .proximity import holds_any, near

_MONTHS = {
    "januari": 1, "jan": 1, "january": 1,
    "februari": 2, "feb": 2, "february": 2,
    "maart": 3, "mrt": 3, "mar": 3, "march": 3,
    "april": 4, "apr": 4,
    "mei": 5, "may": 5,
    "juni": 6, "jun": 6, "june": 6,
    "juli": 7, "jul": 7, "july": 7,
    "augustus": 8, "aug": 8, "august": 8,
    "september": 9, "sep": 9, "sept": 9,
    "oktober": 10, "okt": 10, "oct": 10, "october": 10,
    "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip

_NUMERIC = re.compile(r"(?<![\w.-])(\d{1,2})([-/.])(\d{1,2})\2(\d{4})(?!\w|[-/.]\d)")
_ISO = re.compile(r"(?<![\w.-])(\d{4})-(\d{2})-(\d{2})(?!\w|[-/.]\d)")
_WRITTEN = re.compile(
    r"(?<![\w.-])(\d{1,2})\s+(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
    r"\s+(\d{4})(?!\w)",
    re.IGNORECASE,
)
_BIRTH_WORDS = re.compile(
    r"\bgeboren\b|\bgeboortedatum\b|\bgeboorte|\bgeb\.|\bborn\b|\bdate of birth\b"
    r"|\bbirth ?date\b|\bdob\b",
    re.IGNORECASE,
)
_BIRTH_LETTERS = ("geboren", "geboorte", "geb.", "born", "birth", "dob")
"""A word that every match of `_BIRTH_WORDS` holds."""


def find_birthdates(text: str) -> Iterator[tuple[int, int]]:
    """Yield the span of each real date that follows a birth keyword closely.

    The forms are 12-03-1985 (also with / or .), 12 maart 1985 (Dutch or English month
    names, full or short) and 1985-03-12. 31-02-1985 is no date, so it is not found.
    """
    if not holds_any(text, _BIRTH_LETTERS):
        return
    for match in _NUMERIC.finditer(text):
        day, _, month, year = match.groups()
        if _real(int(year), int(month), int(day)) and near(text, match.start(), _BIRTH_WORDS):
            yield match.span()
    for match in _ISO.finditer(text):
        year, month, day = match.groups()
        if _real(int(year), int(month), int(day)) and near(text, match.start(), _BIRTH_WORDS):
            yield match.span()
    for match in _WRITTEN.finditer(text):
        day, name, year = match.groups()
        month_number = _MONTHS[name.casefold()]
        if _real(int(year), month_number, int(day)) and near(text, match.start(), _BIRTH_WORDS):
            yield match.span()


def _real(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True
