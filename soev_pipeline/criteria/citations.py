"""Citation criteria: the cited sources of a reply, and its quotes and article mentions.

Four kinds compare the cited unit ids of the final turn with the sources of the case
(`citations.required`, `citations.forbidden`, `citations.unseen`) or with the corpus
(`citations.in_corpus`). Two kinds check the reply's own text against the corpus: its
double-quoted spans (`citations.quotes_verbatim`) and the articles it names in prose
(`citations.mentions_in_corpus`). Corpus checks go through the indexes of the corpus
lookup, built once per command, never through a scan of the corpus.

An attempt without a final reply cannot be graded: every kind here then gives an error
verdict with the detail "no reply" (after its own not-applicable check on the case), as
the other families do, except `citations.unseen`, which always passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field

from soev_pipeline.core.models import Case, Evidence, FrozenModel, Verdict
from soev_pipeline.core.ports import Corpus, CriterionContext
from soev_pipeline.corpus.index import quote_fragments
from soev_pipeline.corpus.mentions import Mention, MentionIndex, article_key
from soev_pipeline.corpus.sources import Match, canonical, matching, unique

from .kind import NoParams, criterion
from .verdicts import error, not_applicable, outcome, shorten

NO_REPLY = "no reply"
NO_CORPUS = "no corpus lookup: the project sets no corpus"
_QUOTED = re.compile(r'"([^"]*)"|“([^”“]*)[”“]|„([^”“"]*)[”“"]')
_SHOWN = 60
_LISTED = 5


class MatchParams(FrozenModel):
    """How a cited id meets a source: `hierarchical` (a lid meets its article) or `exact`."""

    match: Match = "hierarchical"


class RequiredParams(MatchParams):
    """`min`: the share of the required source groups that the citations must meet."""

    min: float = Field(default=1.0, ge=0.0, le=1.0)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _listed(items: Sequence[str]) -> str:
    """At most `_LISTED` items, with a count of the rest: details stay short."""
    shown = ", ".join(items[:_LISTED])
    rest = len(items) - _LISTED
    return f"{shown}, and {rest} more" if rest > 0 else shown


@criterion(
    "citations.required",
    RequiredParams,
    needs=(),
    summary="the citations meet at least `min` of the case's required source groups",
    example={"kind": "citations.required", "min": 0.5},
)
async def required(
    case: Case, evidence: Evidence, *, params: RequiredParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the citations meet at least `min` of the case's required source groups."""
    groups = case.sources.required
    if not groups:
        return not_applicable("the case requires no sources")
    if evidence.reply is None:
        return error(NO_REPLY)
    cited = unique(evidence.citations)
    missing = [
        group
        for group in groups
        if not any(matching(source, group, match=params.match) for source in cited)
    ]
    met = len(groups) - len(missing)
    detail = f"{met}/{len(groups)} source groups met"
    if params.min < 1.0:
        detail += f" (min {params.min:g})"
    if missing:
        shown = [" or ".join(canonical(source) for source in group) for group in missing]
        detail += f"; missing: {_listed([f'[{group}]' for group in shown])}"
    return outcome(passed=met / len(groups) >= params.min, detail=detail)


@criterion(
    "citations.forbidden",
    MatchParams,
    needs=(),
    summary="no citation matches a forbidden source of the case",
    example={"kind": "citations.forbidden", "match": "exact"},
)
async def forbidden(
    case: Case, evidence: Evidence, *, params: MatchParams, ctx: CriterionContext
) -> Verdict:
    """Pass when no cited id matches a forbidden source of the case."""
    sources = case.sources.forbidden
    if not sources:
        return not_applicable("the case forbids no sources")
    if evidence.reply is None:
        return error(NO_REPLY)
    cited = unique(evidence.citations)
    hits = [
        f"{source} (forbidden: {', '.join(found)})"
        for source in cited
        if (found := matching(source, sources, match=params.match))
    ]
    if hits:
        return outcome(passed=False, detail=f"cites forbidden sources: {_listed(hits)}")
    return outcome(
        passed=True,
        detail=(
            f"none of {_count(len(cited), 'cited id')} matches "
            f"{_count(len(sources), 'forbidden source')}"
        ),
    )


@criterion(
    "citations.in_corpus",
    NoParams,
    needs={"corpus"},
    summary="each cited id is the id of a unit of the corpus lookup",
    example={"kind": "citations.in_corpus"},
)
async def in_corpus(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when every cited id is the id of a corpus unit (exact ids, no lid-to-article)."""
    if evidence.reply is None:
        return error(NO_REPLY)
    cited = unique(evidence.citations)
    if not cited:
        return not_applicable("the reply cites nothing")
    if ctx.corpus is None:
        return error(NO_CORPUS)
    absent = [source for source in cited if source not in ctx.corpus]
    if absent:
        return outcome(
            passed=False,
            detail=f"{len(absent)}/{len(cited)} cited ids are not in the corpus: {_listed(absent)}",
        )
    return outcome(passed=True, detail=f"every cited id ({len(cited)}) is in the corpus")


@criterion(
    "citations.unseen",
    MatchParams,
    needs=(),
    summary="always; the detail lists the cited ids without a source role, to adjudicate",
    example={"kind": "citations.unseen", "weight": 0},
)
async def unseen(
    case: Case, evidence: Evidence, *, params: MatchParams, ctx: CriterionContext
) -> Verdict:
    """Always pass; list the cited ids that are neither required nor forbidden sources."""
    if evidence.reply is None:
        return outcome(passed=True, detail=f"{NO_REPLY}: nothing cited")
    cited = unique(evidence.citations)
    if not cited:
        return outcome(passed=True, detail="the reply cites nothing")
    known = [source for group in case.sources.required for source in group]
    known += case.sources.forbidden
    without_role = [source for source in cited if not matching(source, known, match=params.match)]
    if not without_role:
        return outcome(passed=True, detail=f"every cited id ({len(cited)}) has a source role")
    return outcome(
        passed=True,
        detail=(
            f"{len(without_role)}/{len(cited)} cited ids without a source role "
            f"(for adjudication): {_listed(without_role)}"
        ),
    )


def quoted_spans(reply: str) -> list[str]:
    """The double-quoted spans of `reply` that hold a word, without repeats, in order.

    Spans are `"..."`, `“...”` and the Dutch `„...”` and `„...“`; single quotes are not
    quotation here (they mark terms and apostrophes). A closing mark may be on another line.
    """
    spans: dict[str, None] = {}
    for match in _QUOTED.finditer(reply):
        span = next(group for group in match.groups() if group is not None)
        if quote_fragments(span):
            spans.setdefault(span, None)
    return list(spans)


@criterion(
    "citations.quotes_verbatim",
    NoParams,
    needs={"corpus"},
    summary=(
        'each double-quoted span of the reply ("…", “…”, „…”) occurs in one corpus unit; '
        "not applicable without quotes"
    ),
    example={"kind": "citations.quotes_verbatim"},
)
async def quotes_verbatim(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when each double-quoted span of the reply occurs in one corpus unit.

    The comparison is on normalized text (see `soev_pipeline.corpus.index.normalize_text`):
    whitespace, letter case, typographic quotes and dashes do not count; an ellipsis leaves
    text out; the quote must start and end on word boundaries of the unit.
    """
    if evidence.reply is None:
        return error(NO_REPLY)
    quotes = quoted_spans(evidence.reply)
    if not quotes:
        return not_applicable("the reply has no double-quoted span")
    if ctx.corpus is None:
        return error(NO_CORPUS)
    index = ctx.corpus.quote_index()
    absent = [quote for quote in quotes if index.find(quote) is None]
    if absent:
        shown = [f'"{shorten(quote, _SHOWN)}"' for quote in absent]
        return outcome(
            passed=False,
            detail=f"{len(absent)}/{len(quotes)} quotes are in no corpus unit: {_listed(shown)}",
        )
    return outcome(passed=True, detail=f"every quote ({len(quotes)}) is in a corpus unit")


def _unresolved(mention: Mention, index: MentionIndex) -> str | None:
    """Why `mention` does not resolve, or None when it does."""
    if mention.law_key is None:
        return f"{mention.text} (law not in the corpus)"
    if index.resolve(mention) is None:
        return f"{mention.text} (no article {mention.article} of {mention.law})"
    return None


def _mentions(reply: str, corpus: Corpus | None) -> tuple[list[Mention], int]:
    """The distinct article mentions of `reply`, and the count of references without a law."""
    index: MentionIndex = corpus.mention_index() if corpus is not None else MentionIndex({})
    found, without_law = index.find_mentions(reply)
    distinct: dict[tuple[str, str], Mention] = {}
    for mention in found:
        law = mention.law_key if mention.law_key is not None else mention.law.casefold()
        distinct.setdefault((law, article_key(mention.article)), mention)
    return list(distinct.values()), without_law


@criterion(
    "citations.mentions_in_corpus",
    NoParams,
    needs={"corpus"},
    summary='each article the reply names with its law ("artikel 6:7 Awb") is a corpus unit',
    example={"kind": "citations.mentions_in_corpus"},
)
async def mentions_in_corpus(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when each article that the reply names with its law resolves to a corpus unit.

    A mention of a law that the corpus does not know does not resolve. A reference that
    names no law (`artikel 6:7 bepaalt`) cannot be resolved and is only counted.
    """
    if evidence.reply is None:
        return error(NO_REPLY)
    mentions, without_law = _mentions(evidence.reply, ctx.corpus)
    if ctx.corpus is None:
        if mentions or without_law:
            return error(NO_CORPUS)
        return not_applicable("the reply mentions no article")
    note = f"; {_count(without_law, 'reference')} without a law not checked" if without_law else ""
    if not mentions:
        return not_applicable(f"the reply mentions no article with its law{note}")
    index: MentionIndex = ctx.corpus.mention_index()
    problems = [problem for mention in mentions if (problem := _unresolved(mention, index))]
    if problems:
        return outcome(
            passed=False,
            detail=(
                f"{len(problems)}/{len(mentions)} article mentions do not resolve: "
                f"{_listed(problems)}{note}"
            ),
        )
    return outcome(
        passed=True,
        detail=f"every article mention ({len(mentions)}) resolves to a corpus unit{note}",
    )
