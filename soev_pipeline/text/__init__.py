"""Text tools: a Dutch-aware sentence splitter, personal identifiers, and a text shortener."""

from .identifiers import (
    IDENTIFIER_KINDS,
    Identifier,
    IdentifierKind,
    find_identifiers,
    mask,
)
from .plates import SIDECODES
from .sentences import letter_words, split_sentences
from .shorten import shorten

__all__ = [
    "IDENTIFIER_KINDS",
    "SIDECODES",
    "Identifier",
    "IdentifierKind",
    "find_identifiers",
    "letter_words",
    "mask",
    "shorten",
    "split_sentences",
]
