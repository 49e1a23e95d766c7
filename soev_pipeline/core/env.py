"""Fill in `${VAR}` and `${VAR:-default}` from the environment, the one way the project does.

A project file names secrets and deployment-specific values by environment variable, so that
none of them sits in the file: `system.base_url`, `judge.base_url` and the headers of both
clients are expanded here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class UnsetVariableError(ValueError):
    """A `${VAR}` without a default names a variable that is not set.

    A `ValueError`, so that a pydantic validator reports it as a field's problem; `name`
    lets a caller word its own message. Neither carries a value.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"environment variable {name} is not set")
        self.name = name


def expand_env(text: str, *, on_value: Callable[[str], None] | None = None) -> str:
    """Replace `${VAR}` and `${VAR:-default}` in `text` with values from the environment.

    `${VAR}` of a variable that is set but empty is empty; `${VAR:-default}` gives the
    default when the variable is unset or empty, as a POSIX shell does. Other `$` text is
    left as written.

    Args:
        text: the text to expand.
        on_value: called with each value read from the environment, one variable at a
            time (a header may join a secret with other text: each part is a secret).

    Raises:
        UnsetVariableError: a variable without a default is not set; the message names it.
    """

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None and (found or default is None):
            if on_value is not None:
                on_value(found)
            return found
        if default is not None:
            return default
        raise UnsetVariableError(name)

    return _REFERENCE.sub(value, text)
