"""What the reference assistant refuses or sets aside before it searches.

A legal information assistant must not handle personal data: a question that carries an
identifier (BSN, IBAN, phone number, e-mail address) or asks for someone's details is
refused with the project's privacy message. The screen is deliberately coarse, the way
such filters are in practice: any nine-digit number counts as a possible BSN, and a
phrase such as "adres van" triggers it even in an innocent question. Evaluations of the
assistant should be able to find both its refusals and its over-refusals.
"""

from __future__ import annotations

import re

from .retrieval import fold

_IDENTIFIERS = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    re.compile(r"\b[a-z]{2}\d{2} ?[a-z]{4}(?: ?\d){10}\b", re.IGNORECASE),
    re.compile(r"\b\d{9}\b|\b\d{4}\.\d{2}\.\d{3}\b"),
    re.compile(r"(?:\+31|\b0031|\b0)[ -]?(?:\(0\)[ -]?)?[1-9](?:[ -]?\d){8}\b"),
)

_PERSONAL_PHRASES = (
    "persoonsgegevens van",
    "adres van",
    "woonadres",
    "waar woont",
    "telefoonnummer van",
    "bsn van",
    "burgerservicenummer van",
    "geboortedatum van",
    "e-mailadres van",
    "rekeningnummer van",
)

_OFF_TOPIC = (
    "recept",
    "appeltaart",
    "koken",
    "bakken",
    "weerbericht",
    "weersverwachting",
    "regent",
    "voetbal",
    "vakantie",
    "horoscoop",
)


def asks_for_personal_data(question: str) -> bool:
    """Whether `question` holds a personal identifier or asks for someone's details."""
    if any(pattern.search(question) for pattern in _IDENTIFIERS):
        return True
    folded = fold(question)
    return any(phrase in folded for phrase in _PERSONAL_PHRASES)


def off_topic(question: str) -> bool:
    """Whether `question` is plainly about something other than law (food, weather, sport)."""
    folded = fold(question)
    return any(re.search(rf"\b{word}", folded) for word in _OFF_TOPIC)
