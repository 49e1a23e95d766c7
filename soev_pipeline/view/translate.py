"""The one function that puts a text of the pages into the reader's language.

Every text a page shows that the viewer wrote goes through `_`, in templates
(`{{ _("...") }}`, a global of the template environment) and in Python, as a whole
sentence with named placeholders (`_("%(n)s of %(total)s labelled") % {...}`), so that
a catalog can translate it. For now the English is shown as it is.
"""

from __future__ import annotations


def _(message: str) -> str:
    """`message` in the reader's language (for now: as it is)."""
    return message
