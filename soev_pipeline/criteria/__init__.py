"""The built-in criteria, and the parts to write your own criterion kind."""

from .builtins import builtin_registry
from .kind import NEEDS, Builtin, CriterionKind, Evaluator, Need, NoParams, criterion
from .registry import BoundCriterion, CriterionRegistry
from .verdicts import error, judge_label, not_applicable, outcome

__all__ = [
    "NEEDS",
    "BoundCriterion",
    "Builtin",
    "CriterionKind",
    "CriterionRegistry",
    "Evaluator",
    "Need",
    "NoParams",
    "builtin_registry",
    "criterion",
    "error",
    "judge_label",
    "not_applicable",
    "outcome",
]
