"""Characters that cannot be written, or must not be shown raw: the wire's text made safe.

A system under test and a judge send JSON, and JSON may hold a lone surrogate escape
(`"\\ud800"`, half of an emoji that a model cut in two): Python decodes it into a string
that cannot be encoded as UTF-8, so writing it to a file, to SQLite or into a request
fails. Text from the wire is `scrub`bed: by the models that hold it (`core.models.WireText`),
so whatever arm made the evidence, and where it is sent on (a reply in the next turn's
request, a judge answer into its cache), so one such character never stops a run.

Control characters (NUL, ESC, the C1 controls, bidirectional overrides) are valid text and
are archived as they came; they are escaped only where they would do harm: `printable` for
a terminal, where ESC starts a command, and `xml_safe` for XML 1.0, which cannot hold most
of them at all.
"""

from __future__ import annotations

import re
from typing import Any

_UNSHOWN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)
"""What `printable` escapes, but for the characters it is told to keep: the C0 controls,
DEL, the C1 controls (CSI among them), the bidirectional marks, overrides and isolates,
lone surrogates, and the two noncharacters that XML refuses."""


def scrub(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8.

    A surrogate pair that was left split into two code points is joined into the character
    it stands for. Text without surrogates is returned as it is, at the cost of one scan.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # a tenth of the time of a search for the surrogates
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def scrub_tree(value: Any) -> Any:
    """`value` with `scrub` applied to every string in it, dict keys included.

    For JSON-like data (dicts, lists, tuples, strings, scalars); other values pass as they are.
    """
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_tree(key): scrub_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_tree(item) for item in value)
    return value


def printable(text: str, *, keep: str = "\n\t") -> str:
    """`text` safe to print on a terminal: control characters shown as `\\x1b`, `\\u202e`.

    Escapes what `_UNSHOWN` lists, except the characters in `keep` (line feed and tab by
    default; pass `keep=""` for a one-line field). Printable text, non-ASCII letters and
    emoji included, is left as it is.
    """
    if text.isascii() and text.isprintable():
        return text

    def escape(match: re.Match[str]) -> str:
        found = match.group()
        if found in keep:
            return found
        point = ord(found)
        return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"

    return _UNSHOWN.sub(escape, text)


def xml_safe(text: str) -> str:
    """`text` that XML 1.0 can hold: what it refuses (NUL, ESC, lone surrogates, U+FFFE)
    is escaped as `printable` escapes it, and so are the C1 controls, which XML allows but a
    reader of a CI log should not meet raw. Tab, line feed and carriage return stay.
    """
    return printable(text, keep="\t\n\r")
