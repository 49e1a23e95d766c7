"""The one function through which the pages' own words pass: `_`.

It gives the English text back as it is, with its `%(name)s` placeholders filled in, as
Jinja2's new-style gettext does; a catalog of other languages can replace it without a
change to the strings that call it.
"""

from __future__ import annotations


def _(message: str, /, **variables: object) -> str:
    """`message` in the reader's language, its placeholders filled from `variables`."""
    return message % variables if variables else message
