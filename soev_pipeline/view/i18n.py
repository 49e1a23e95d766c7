"""The pages' language: English or Dutch, through gettext catalogs (Babel).

English is the language the pages are written in: its strings are the catalog's ids.
`locales/nl/LC_MESSAGES/messages.po` holds their Dutch; it is package data, and it is
compiled in memory the first time a Dutch page is made (Babel's `read_po` and `write_mo`),
so a clean clone, an editable install and the wheel all work without a build step, and no
compiled file can fall behind its source.

The language of a page is the language of the request (or of the HTML report) being made:
`speaking(language)` sets it for the code that runs inside, and every string the pages
make, in templates (`_`) or in Python (`translate._`), is looked up in that language's
catalog.
A string that must be known before then (a column's title, a status's name) is marked with
`N_` where it is written, and translated where it is shown.
"""

from __future__ import annotations

import functools
import gettext as stdlib_gettext
import io
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import resources
from typing import get_args

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import get_decimal_symbol
from babel.support import Translations

from soev_pipeline.core.project import Language as Language  # re-exported

LANGUAGES: tuple[Language, ...] = get_args(Language)
"""The languages the pages speak; the first is the default."""
DEFAULT_LANGUAGE: Language = "en"
DOMAIN = "messages"

_language: ContextVar[Language] = ContextVar("soev_view_language", default=DEFAULT_LANGUAGE)


def N_(message: str) -> str:
    """Mark `message` for the catalog without translating it (yet)."""
    return message


@functools.cache
def translations(language: Language) -> stdlib_gettext.NullTranslations:
    """The catalog of `language`: its `.po` file compiled in memory; English needs none."""
    if language == DEFAULT_LANGUAGE:
        return stdlib_gettext.NullTranslations()
    po = resources.files(__package__) / "locales" / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    with po.open("rb") as source:
        catalog = read_po(source, locale=language, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


def current() -> Language:
    """The language of the page being made."""
    return _language.get()


@contextmanager
def speaking(language: Language) -> Iterator[None]:
    """Make the pages inside this block in `language`."""
    token = _language.set(language)
    try:
        yield
    finally:
        _language.reset(token)


def gettext(message: str) -> str:
    """`message` in the current language."""
    return translations(current()).gettext(message)


def ngettext(singular: str, plural: str, count: int) -> str:
    """The singular or plural of a message with `count`, in the current language."""
    return translations(current()).ngettext(singular, plural, count)


def decimal(value: float, places: int) -> str:
    """`value` with `places` decimals, with the decimal sign of the current language
    (`76.5`, `76,5`); no grouping, so a figure reads the same in a table and a sentence."""
    text = f"{value:.{places}f}"
    symbol = get_decimal_symbol(current())
    return text if symbol == "." else text.replace(".", symbol)


TERMS = {
    "pass": N_("pass"),
    "fail": N_("fail"),
    "error": N_("error"),
    "not_applicable": N_("not applicable"),
    "regressed": N_("regressed"),
    "improved": N_("improved"),
    "unchanged": N_("unchanged"),
    "inconclusive": N_("inconclusive"),
    "not_significant": N_("not significant"),
    "invariance": N_("invariance"),
    "sensitivity": N_("sensitivity"),
}
"""The values of the report that the pages show as words (a status, a comparison's
verdict, a probe's kind), each with its name to translate."""


def term(value: object) -> str:
    """A value of the report as a word of the current language (`not_applicable`:
    `not applicable`, `niet van toepassing`); a value it does not know, as it is."""
    text = str(value)
    name = TERMS.get(text)
    return gettext(name) if name is not None else text.replace("_", " ")
