"""The answering policy of the reference assistant: refuse, abstain, or quote and cite.

The policy is small on purpose, so that a reader of an evaluation report can tell why a
case passed or failed: the assistant refuses questions about personal data, abstains when
nothing in its corpus matches well enough, and otherwise quotes one sentence of the best
unit and cites it, adding a second citation when the runner-up scores close. Its known
weaknesses are real ones: a follow-up question only sees the question just before it,
and a sentence too long to quote whole is shortened with an ellipsis inside the quotes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from soev_pipeline.corpus import CorpusLookup, CorpusUnit, load_corpus
from soev_pipeline.text import shorten as shorten_text

from .retrieval import Hit, Retriever, mentioned_labels, tokenize
from .screening import asks_for_personal_data, off_topic

DEFAULT_MESSAGES: Mapping[str, str] = {
    "privacy": "Ik kan geen vragen over persoonsgegevens beantwoorden.",
    "out_of_scope": "Die vraag valt buiten wat ik kan beantwoorden.",
}

TOP_K = 3
MIN_SCORE = 4.0
SECOND_CITATION_SHARE = 0.8
MAX_QUOTE = 200

# The tokens of the instructions that every prompt carries.
_INSTRUCTION_TOKENS = 160
_TOKENS_PER_WORD = 1.3
_MIN_QUOTE_WORDS = 8
_SENTENCE = re.compile(r"[^.!?]+[.!?]")

Kind = Literal["answer", "refuse", "abstain"]


def bundled_corpus() -> CorpusLookup:
    """The corpus that ships with the package: paraphrased articles of the Awb, BW and Grondwet."""
    with resources.as_file(resources.files(__package__) / "corpus.jsonl") as path:
        return load_corpus(path)


def tokens_of(*texts: str) -> int:
    """A plausible token count for `texts`: 1.3 tokens per word, rounded up."""
    return math.ceil(sum(len(text.split()) for text in texts) * _TOKENS_PER_WORD)


@dataclass(frozen=True)
class Citation:
    """A cited unit: its position among the hits and the offset in the reply it belongs to."""

    hit: int
    at: int


@dataclass(frozen=True)
class Reply:
    """What the assistant answers to one turn.

    `hits` is what it read (None when it did not search at all), `citations` point into
    `hits`, and the token counts are estimates from word counts.
    """

    kind: Kind
    content: str
    hits: tuple[Hit, ...] | None
    citations: tuple[Citation, ...]
    prompt_tokens: int
    completion_tokens: int


def mention(unit: CorpusUnit) -> str:
    """How the reply names a unit: "artikel 6:7 Awb", "artikel 10 Grondwet".

    A one-word law name reads well as it is; a longer one is named by its first alias.
    """
    label = unit.article or unit.id.rsplit("/", 1)[-1]
    law = unit.law or ""
    if law and " " in law and unit.aliases:
        law = unit.aliases[0]
    return f"artikel {label} {law}".strip()


def best_sentence(text: str, query: str) -> str:
    """The sentence of `text` that shares the most terms with `query`; the first on a tie.

    A short remark such as "Dit heet overmacht." says too little to quote, so sentences
    under `_MIN_QUOTE_WORDS` words compete only when the text has nothing longer.
    """
    sentences = [match.group(0).strip() for match in _SENTENCE.finditer(text)] or [text.strip()]
    long_enough = [s for s in sentences if len(s.split()) >= _MIN_QUOTE_WORDS] or sentences
    wanted = set(tokenize(query))
    return max(long_enough, key=lambda sentence: len(wanted & set(tokenize(sentence))))


def shorten(sentence: str) -> str:
    """`sentence`, or its first words up to `MAX_QUOTE` characters and an ellipsis."""
    return shorten_text(sentence, MAX_QUOTE, at_word=True)


class Assistant:
    """Answers questions about the units of a corpus.

    Args:
        corpus: the units it may read and cite; the bundled corpus when None.
        messages: the project messages by code; it needs `privacy` and `out_of_scope`.
        min_score: the BM25 score the best unit needs, else it abstains. BM25 scores grow
            with the corpus, so the default suits the bundled corpus; a much smaller or
            larger corpus wants its own.

    Raises:
        ValueError: a needed message is missing.
    """

    def __init__(
        self,
        corpus: CorpusLookup | None = None,
        messages: Mapping[str, str] | None = None,
        *,
        min_score: float = MIN_SCORE,
    ) -> None:
        self.min_score = min_score
        self.corpus = corpus if corpus is not None else bundled_corpus()
        self.messages = dict(DEFAULT_MESSAGES if messages is None else messages)
        missing = sorted({"privacy", "out_of_scope"} - set(self.messages))
        if missing:
            raise ValueError(f"the assistant needs the messages {', '.join(missing)}")
        self.retriever = Retriever(self.corpus)

    def answer(self, question: str, earlier: Sequence[str] = ()) -> Reply:
        """Answer `question`; `earlier` are the thread's previous user turns, oldest first.

        Only the question just before this one joins the search, the way a simple
        follow-up rewriter works; the whole history still counts in the prompt tokens.
        """
        if asks_for_personal_data(question):
            return self._reply("refuse", self.messages["privacy"], None, (), question, earlier)
        query = f"{earlier[-1]} {question}" if earlier else question
        hits = tuple(self.retriever.search(query, TOP_K))
        named = bool(mentioned_labels(question))
        if not hits or hits[0].score < self.min_score or (off_topic(question) and not named):
            content = self.messages["out_of_scope"]
            return self._reply("abstain", content, hits, (), question, earlier)
        best = hits[0].unit
        content = f'Volgens {mention(best)}: "{shorten(best_sentence(best.text, query))}"'
        citations = [Citation(0, len(content))]
        if len(hits) > 1 and hits[1].score >= SECOND_CITATION_SHARE * hits[0].score:
            content += f" Zie ook {mention(hits[1].unit)}."
            citations.append(Citation(1, len(content)))
        return self._reply("answer", content, hits, citations, question, earlier)

    @staticmethod
    def _reply(
        kind: Kind,
        content: str,
        hits: tuple[Hit, ...] | None,
        citations: Sequence[Citation],
        question: str,
        earlier: Sequence[str],
    ) -> Reply:
        read = [hit.unit.text for hit in hits or ()]
        return Reply(
            kind=kind,
            content=content,
            hits=hits,
            citations=tuple(citations),
            prompt_tokens=_INSTRUCTION_TOKENS + tokens_of(*earlier, question, *read),
            completion_tokens=tokens_of(content),
        )
