"""The corpus lookup: the units of law an assistant may cite (SPEC.md section 4)."""

from .lookup import CorpusLookup, load_corpus
from .unit import CorpusUnit

__all__ = ["CorpusLookup", "CorpusUnit", "load_corpus"]
