"""The corpus lookup: the units of law an assistant may cite (docs/project.md#the-corpus-lookup)."""

from .lookup import CorpusLookup, load_corpus
from .unit import CorpusUnit

__all__ = ["CorpusLookup", "CorpusUnit", "load_corpus"]
