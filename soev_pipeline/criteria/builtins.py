"""The registry of the built-in criterion kinds."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import behaviour, citations, compare, judged, privacy, reply, rubric, usage
from .kind import Builtin
from .registry import CriterionRegistry

FAMILIES: tuple[ModuleType, ...] = (
    reply,
    privacy,
    behaviour,
    citations,
    compare,
    judged,
    rubric,
    usage,
)
"""The modules of the built-in kinds, one family each."""


def kinds_of(family: ModuleType) -> list[Builtin[Any]]:
    """The kinds a family module defines: its module-level `Builtin`s, in their order.

    A kind is declared once, where its evaluator is (`@criterion`), so a family keeps
    no second list of its kinds to forget a new one in.
    """
    return [value for value in vars(family).values() if isinstance(value, Builtin)]


def builtin_registry() -> CriterionRegistry:
    """Return a new registry with every built-in criterion kind. Each call returns a new one.

    docs/criteria.md lists the kinds, generated from this registry by
    scripts/criteria_table.py.
    """
    return CriterionRegistry(kind for family in FAMILIES for kind in kinds_of(family))
