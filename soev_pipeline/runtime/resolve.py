"""Find the runtime provider a command asked for: the built-in one, or an entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from soev_pipeline.core.errors import ProjectError

from .builtin import BuiltinRuntime
from .providers import BUILTIN, ENTRY_POINT_GROUP, RuntimeProvider


def resolve_runtime(name: str | None, *, state: Path | None = None) -> RuntimeProvider:
    """Return the provider called `name` from the entry points, or the built-in one.

    Args:
        name: the provider's entry point name; None or `builtin` for the built-in one.
        state: the project's state folder, where the built-in provider keeps the judge cache.

    Raises:
        ProjectError: two entry points have the name, or none has it.
    """
    if name is None or name == BUILTIN:
        return BuiltinRuntime(state)
    found = [point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name == name]
    if not found:
        known = sorted({point.name for point in entry_points(group=ENTRY_POINT_GROUP)})
        raise ProjectError(
            f"runtime {name!r}: no entry point of that name in group {ENTRY_POINT_GROUP!r} "
            f"(known: {', '.join(known) or 'none'})"
        )
    if len({point.value for point in found}) > 1:
        raise ProjectError(
            f"runtime {name!r}: {len(found)} entry points in group {ENTRY_POINT_GROUP!r} "
            "have that name"
        )
    factory = found[0].load()
    provider = factory()
    if not isinstance(provider, RuntimeProvider):
        raise ProjectError(f"runtime {name!r}: {found[0].value} did not make a runtime provider")
    return provider
