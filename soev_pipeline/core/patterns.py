"""Regular expressions that cannot run away: RE2, whose matching takes time linear in the text.

A pattern that a user writes (`reply.contains` `regex`) runs on replies the system under
test chose; with a backtracking engine such as Python's `re`, `(a+)+$` on a long reply takes
longer than the age of the universe. RE2 (`google-re2`, Google's engine) builds an
automaton instead: no pattern and no text can make it backtrack, so a verdict never
depends on how busy the machine is, as a time limit per match would make it. The price is
RE2's syntax: no backreferences, no lookaround, and `\\w`, `\\d`, `\\s`, `\\b` are ASCII-only
(`\\pL` is a letter of any script). A pattern RE2 cannot take is refused when it is
compiled, with RE2's reason; the project's loader turns that into an error that names the
file, the case and the field.

The secrets (`core.secrets`) are searched with it too: one pass over a text, whatever the
number of secret forms.
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]

MAX_MEM = 64 * 1024 * 1024
"""The memory one compiled pattern may use (RE2's default is 8 MiB)."""


class PatternError(ValueError):
    """RE2 cannot take the pattern: the message says why."""


class LinearPattern:
    """A compiled RE2 pattern over `str` text.

    Args:
        pattern: the pattern, in RE2 syntax (Python's, less backreferences and lookaround).
        case_sensitive: False to match without regard to case (Unicode case folding).

    Raises:
        PatternError: RE2 cannot take the pattern.
    """

    def __init__(self, pattern: str, *, case_sensitive: bool = True) -> None:
        options = re2.Options()
        options.case_sensitive = case_sensitive
        options.log_errors = False  # RE2 would print its own line on stderr
        options.max_mem = MAX_MEM
        try:
            self._compiled: Any = re2.compile(pattern, options)
        except re2.error as exc:
            raise PatternError(_reason(exc)) from None
        self.pattern = pattern

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in `text`.

        Raises:
            UnicodeEncodeError: `text` holds a lone surrogate (see `core.chars.scrub`).
        """
        # on bytes: RE2 reads UTF-8, and the wrapper maps no offsets back to characters
        return self._compiled.search(text.encode("utf-8")) is not None

    def sub(self, replacement: str, text: str) -> str:
        """`text` with every match replaced by `replacement`, taken literally.

        Raises:
            UnicodeEncodeError: `text` holds a lone surrogate (see `core.chars.scrub`).
        """
        if not self.search(text):
            return text
        result: str = self._compiled.sub(lambda match: replacement, text)
        return result


def _reason(exc: BaseException) -> str:
    reason = exc.args[0] if exc.args else type(exc).__name__
    text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return text.removeprefix("Error parsing ").strip()
