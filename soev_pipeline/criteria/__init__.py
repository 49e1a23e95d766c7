"""The built-in criteria, and the parts to write your own criterion kind."""

from .builtins import PURE_KINDS, builtin_registry
from .registry import Builtin, CriterionKind, CriterionRegistry, Evaluator, NoParams
from .verdicts import error, judge_label, not_applicable, outcome

__all__ = [
    "PURE_KINDS",
    "Builtin",
    "CriterionKind",
    "CriterionRegistry",
    "Evaluator",
    "NoParams",
    "builtin_registry",
    "error",
    "judge_label",
    "not_applicable",
    "outcome",
]
