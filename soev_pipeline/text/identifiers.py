"""Find Dutch personal identifiers in free text: find by pattern, confirm by each kind's check.

A pattern alone finds too much: one in eleven 9-digit numbers passes the BSN elfproef, and
almost any 9-character token looks like a document number. So each candidate must pass
its kind's own check (elfproef, mod 97, the phone number plan, a real calendar date, the
sidecode table), and the kinds that collide with many ordinary tokens (8-digit BSNs,
birth dates, document numbers, plates without hyphens) count only near a word that says
what they are. A number that fails its check is not that kind.

The kinds run in a fixed order and each claims its span, so a later kind never reads the
digits of an earlier one: an IBAN's account number or a BSN is never also a phone number.

Most replies hold none, so the scans are skipped where they cannot find anything: a text
without a digit or an "@" holds no identifier, and the kinds that count only near a
keyword are not scanned for in a text without the keyword's letters (`holds_any`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from stdnum import iban as stdnum_iban
from stdnum.nl import bsn as stdnum_bsn
from stdnum.nl import identiteitskaartnummer as stdnum_document
from stdnum.nl import postcode as stdnum_postcode

from .dates import find_birthdates
from .plates import find_license_plates
from .proximity import holds_any, near

IdentifierKind = Literal[
    "bsn", "iban", "email", "nl_phone", "postcode", "birthdate", "id_number", "license_plate"
]
IDENTIFIER_KINDS: tuple[IdentifierKind, ...] = get_args(IdentifierKind)


@dataclass(frozen=True)
class Identifier:
    """A personal identifier found in a text: its kind, the text as written and where."""

    kind: IdentifierKind
    value: str
    start: int
    end: int

    def masked(self) -> str:
        """The value with most of it hidden, safe to show in a verdict detail."""
        return mask(self.kind, self.value)


def find_identifiers(
    text: str, kinds: Iterable[IdentifierKind] = IDENTIFIER_KINDS
) -> list[Identifier]:
    """Return the identifiers of `kinds` in `text`, in the order they appear.

    Every kind is searched, in the order email, IBAN, BSN, document number, licence
    plate, postcode, birth date, phone number, and each claims its span before the next
    looks; only the `kinds` asked for are returned. So asking for phone numbers alone
    still never reports the digits of an IBAN or a BSN.
    """
    wanted = set(kinds)
    if not _DIGIT_OR_AT.search(text):
        return []
    claimed: list[tuple[int, int]] = []
    found: list[Identifier] = []
    # The kinds after the last one asked for are not searched: they could only hide others.
    last = max((n for n, (kind, _) in enumerate(_FINDERS) if kind in wanted), default=-1)
    for kind, finder in _FINDERS[: last + 1]:
        for start, end in finder(_blank(text, claimed)):
            if any(start < other_end and other_start < end for other_start, other_end in claimed):
                continue
            claimed.append((start, end))
            if kind in wanted:
                found.append(Identifier(kind, text[start:end], start, end))
    return sorted(found, key=lambda identifier: identifier.start)


_DIGIT_OR_AT = re.compile(r"[\d@]")
"""What a text without any identifier may lack: every kind but e-mail needs a digit (of any
script, as `\\d` and the phone number matcher take them), an e-mail address its "@"."""


def mask(kind: IdentifierKind, value: str) -> str:
    """Hide most of `value`: enough stays to recognise it in the text, never all of it.

    A BSN keeps its first four digits ("1112*****"), an IBAN its country, check digits and
    last four ("NL91****4300"), an e-mail address the first letter and the top-level
    domain, a date its separators and month name, and the other kinds their first two or
    three characters.
    """
    compact = re.sub(r"[\s.]", "", value)
    if kind == "bsn":
        return compact[:4] + "*" * (len(compact) - 4)
    if kind == "iban":
        return compact[:4].upper() + "****" + compact[-4:]
    if kind == "email":
        local, _, domain = value.partition("@")
        return f"{local[:1]}***@***.{domain.rsplit('.', 1)[-1]}"
    if kind == "birthdate":
        return re.sub(r"\d", "*", value)
    if kind == "nl_phone":
        digits = re.sub(r"[^\d+]", "", value)
        return digits[:3] + "*" * (len(digits) - 5) + digits[-2:]
    if kind == "postcode":
        return compact[:2] + "*" * (len(compact) - 2)
    return value[:2] + re.sub(r"[A-Za-z0-9]", "*", value[2:])


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with every claimed span turned into spaces, so the offsets stay the same."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}(?![\w-])"
)


def _emails(text: str) -> Iterator[tuple[int, int]]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        yield match.span()


_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ \t]?[A-Za-z0-9]){11,30}")
_IBAN_MIN = 15


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    """Each IBAN: the longest part of a candidate that passes mod 97 and ends a word.

    The pattern may run on into the next word ("NL91 ABNA 0417 1643 00 BV"), so the
    candidate is shortened until a valid IBAN that ends at a word boundary is left.
    """
    for match in _IBAN.finditer(text):
        start = match.start()
        for end in range(match.end(), start + _IBAN_MIN - 1, -1):
            if end < len(text) and text[end].isalnum():
                continue
            candidate = text[start:end]
            if candidate[-1].isspace():
                continue
            if stdnum_iban.is_valid(candidate.upper()):
                yield start, end
                break


# One scan for both lengths: group 1 is a 9-digit number, group 2 an 8-digit one.
_BSN = re.compile(r"(?<![\w.,+-])(?:(\d{9}|\d{4}\.\d{2}\.\d{3})|(\d{8}))(?![\w-]|[.,]\d)")
_BSN_WORDS = re.compile(r"\b(?:bsn|burgerservicenummer|sofi-?nummer)\b", re.IGNORECASE)
_PHONE_PREFIX = re.compile(r"(?:\+|00)\d{1,3}\s*(?:\(0\)\s*)?$")


def _bsns(text: str) -> Iterator[tuple[int, int]]:
    """9-digit numbers that pass the elfproef; 8-digit ones only after a BSN keyword.

    A number right after a country calling code ("+31 612345678") is a phone number.
    """
    for match in _BSN.finditer(text):
        start, end = match.span()
        if _PHONE_PREFIX.search(text[max(0, start - 12) : start]):
            continue
        if match.group(2) and not near(text, start, _BSN_WORDS):
            continue
        if stdnum_bsn.is_valid(match.group()):
            yield start, end


_DOCUMENT = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[A-Z0-9]{6}\d(?![A-Za-z0-9])")
_DOCUMENT_WORDS = re.compile(
    r"paspoort|id-?kaart|identiteitskaart|identiteitsbewijs|documentnummer|passport"
    r"|identity card|document number",
    re.IGNORECASE,
)
_DOCUMENT_LETTERS = (
    "paspoort",
    "kaart",
    "identiteitsbewijs",
    "documentnummer",
    "passport",
    "identity card",
    "document number",
)
"""A word that every match of `_DOCUMENT_WORDS` holds."""


def _document_numbers(text: str) -> Iterator[tuple[int, int]]:
    """Passport and ID card numbers that follow a word naming the document."""
    if not holds_any(text, _DOCUMENT_LETTERS):
        return
    for match in _DOCUMENT.finditer(text):
        start = match.start()
        if near(text, start, _DOCUMENT_WORDS, reach=60) and stdnum_document.is_valid(match.group()):
            yield match.span()


_POSTCODE = re.compile(r"(?<![\w-])[1-9]\d{3} ?[A-Z]{2}(?![\w-])")


def _postcodes(text: str) -> Iterator[tuple[int, int]]:
    for match in _POSTCODE.finditer(text):
        if stdnum_postcode.is_valid(match.group()):
            yield match.span()


_PHONE_MIN_DIGITS = 9
"""The fewest digits of a Dutch number that is no service number: fixed, mobile, pager and
VoIP numbers have nine after the 0 or the +31."""
# What the phone matcher needs to find such a number: that many digits, each at most four
# of its separators from the next. Each separator it knows is \W, "x" or "ー"; and since
# the parser may read an "x" as a digit, an "x" counts as one.
_PHONE_DIGITS = re.compile(rf"[\dxX](?:[\Wー]{{0,4}}[\dxX]){{{_PHONE_MIN_DIGITS - 1}}}")


@functools.cache
def _service_types() -> frozenset[int]:
    """The types of service numbers (0800, 0900, 14 0xx, ...): organisations', not a person's."""
    import phonenumbers

    types = phonenumbers.PhoneNumberType
    return frozenset({types.TOLL_FREE, types.PREMIUM_RATE, types.SHARED_COST, types.UAN})


def _phones(text: str) -> Iterator[tuple[int, int]]:
    """Dutch phone numbers that the numbering plan accepts, except service numbers.

    The matcher parses every number it sees (years, article numbers) and is slow, so it
    runs only on a text that holds enough digits close together for a personal number.
    """
    if not _PHONE_DIGITS.search(text):
        return
    import phonenumbers  # a twentieth of a second to import: only when a text may hold one

    service = _service_types()
    for match in phonenumbers.PhoneNumberMatcher(text, "NL"):
        number = match.number
        if number.country_code != 31:
            continue
        if phonenumbers.number_type(number) in service:
            continue
        yield match.start, match.end


_FINDERS: tuple[tuple[IdentifierKind, Callable[[str], Iterable[tuple[int, int]]]], ...] = (
    ("email", _emails),
    ("iban", _ibans),
    ("bsn", _bsns),
    ("id_number", _document_numbers),
    ("license_plate", find_license_plates),
    ("postcode", _postcodes),
    ("birthdate", find_birthdates),
    ("nl_phone", _phones),
)
