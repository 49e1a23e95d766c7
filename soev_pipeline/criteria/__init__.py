"""The built-in criteria, and the parts to write your own criterion kind."""

from .builtins import builtin_registry
from .registry import NEEDS, Builtin, CriterionKind, CriterionRegistry, Evaluator, Need, NoParams
from .verdicts import error, judge_label, not_applicable, outcome

__all__ = [
    "NEEDS",
    "Builtin",
    "CriterionKind",
    "CriterionRegistry",
    "Evaluator",
    "Need",
    "NoParams",
    "builtin_registry",
    "error",
    "judge_label",
    "not_applicable",
    "outcome",
]
