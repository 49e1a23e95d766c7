"""Text tools for the criteria: a Dutch-aware sentence splitter and personal identifiers."""

from .identifiers import (
    IDENTIFIER_KINDS,
    Identifier,
    IdentifierKind,
    find_identifiers,
    mask,
)
from .plates import SIDECODES
from .sentences import letter_words, split_sentences

__all__ = [
    "IDENTIFIER_KINDS",
    "SIDECODES",
    "Identifier",
    "IdentifierKind",
    "find_identifiers",
    "letter_words",
    "mask",
    "split_sentences",
]
