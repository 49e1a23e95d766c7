"""The services of one command: runtime providers, the built-in one, and opening them."""

from .builtin import BuiltinRuntime, check_reachable, open_project_judge
from .providers import (
    BUILTIN,
    ENTRY_POINT_GROUP,
    Operation,
    RuntimeBindings,
    RuntimeProvider,
)
from .resolve import open_runtime, resolve_runtime

__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "BuiltinRuntime",
    "Operation",
    "RuntimeBindings",
    "RuntimeProvider",
    "check_reachable",
    "open_project_judge",
    "open_runtime",
    "resolve_runtime",
]
