"""The registry of the built-in criterion kinds."""

from __future__ import annotations

from . import behaviour, citations, compare, judged, privacy, reply, rubric, usage
from .registry import CriterionRegistry

_FAMILIES = (reply, privacy, behaviour, citations, compare, judged, rubric, usage)
_JUDGED = (judged, rubric)

PURE_KINDS: frozenset[str] = frozenset(
    kind.name for family in _FAMILIES if family not in _JUDGED for kind in family.KINDS
)
"""The built-in kinds that ask no judge: each verdict is a function of the case, the evidence
and the project's context (messages, corpus, language detector) alone, with no I/O, so a
grading may evaluate them in another process."""


def builtin_registry() -> CriterionRegistry:
    """Return a new registry with the 22 built-in criterion kinds. Each call returns a new one."""
    return CriterionRegistry(kind for family in _FAMILIES for kind in family.KINDS)
