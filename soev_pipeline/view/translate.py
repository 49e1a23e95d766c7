"""The one function through which the pages' own words pass in Python: `_`.

It gives the text in the language of the page being made (`i18n.gettext`, from the
catalogs of `soev_pipeline/view/locales`), with its `%(name)s` placeholders filled in, as
Jinja2's new-style gettext does in the templates.
"""

from __future__ import annotations

from .i18n import gettext


def _(message: str, /, **variables: object) -> str:
    """`message` in the reader's language, its placeholders filled from `variables`."""
    text = gettext(message)
    return text % variables if variables else text
