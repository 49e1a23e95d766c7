"""A small retrieval assistant that speaks the soev thread API, for demos, tests and benchmarks.

It answers Dutch legal questions from a bundled corpus of paraphrased articles of the Awb,
the Burgerlijk Wetboek and the Grondwet: it refuses questions about personal data,
abstains outside its corpus, and otherwise quotes and cites the article it found.
"""

from .assistant import DEFAULT_MESSAGES, Assistant, Reply, bundled_corpus
from .command import main
from .retrieval import Hit, Retriever, tokenize
from .server import ReferenceServer, serve
from .threads import Counters, ThreadService

__all__ = [
    "DEFAULT_MESSAGES",
    "Assistant",
    "Counters",
    "Hit",
    "ReferenceServer",
    "Reply",
    "Retriever",
    "ThreadService",
    "bundled_corpus",
    "main",
    "serve",
    "tokenize",
]
