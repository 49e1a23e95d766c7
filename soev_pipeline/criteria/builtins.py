"""The registry of the built-in criterion kinds."""

from __future__ import annotations

from . import behaviour, citations, compare, judged, privacy, reply, rubric, usage
from .registry import CriterionRegistry

_FAMILIES = (reply, privacy, behaviour, citations, compare, judged, rubric, usage)


def builtin_registry() -> CriterionRegistry:
    """Return a new registry with every built-in criterion kind. Each call returns a new one.

    docs/criteria.md lists the kinds, generated from this registry by
    scripts/criteria_table.py.
    """
    return CriterionRegistry(kind for family in _FAMILIES for kind in family.KINDS)
