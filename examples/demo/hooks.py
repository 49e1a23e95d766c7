"""Hooks of the demo project: one criterion kind of its own.

`demo.names_article` checks what a citation alone cannot: that the reply tells the reader
which article it relies on, in the prose, as "artikel 6:7 Awb". A user who reads the
answer in a chat window sees no citation metadata, only the text.
"""

from __future__ import annotations

import re

from soev_pipeline.core import Case, CriterionContext, Evidence, FrozenModel, Verdict
from soev_pipeline.criteria import Builtin, error, not_applicable, outcome

_GAP = r"[\s,]*(?:(?:van|uit)\s+(?:de|het)\s+)?"


class NamesArticleParams(FrozenModel):
    """`with_law`: the mention must also name the law ("artikel 6:7 Awb", not "artikel 6:7")."""

    with_law: bool = True


def _article(source: str) -> tuple[str, str] | None:
    """The article id and label of a source: `BWBR0005537/artikel-6:7/lid-1` gives
    (`BWBR0005537/artikel-6:7`, `6:7`)."""
    segments = source.split("/")
    for position, segment in enumerate(segments):
        if segment.startswith("artikel-"):
            return "/".join(segments[: position + 1]), segment.removeprefix("artikel-")
    return None


def _named(reply: str, label: str, laws: list[str]) -> bool:
    article = rf"\b(?:artikel|art\.)\s*{re.escape(label)}(?![\w:])"
    if not laws:
        return re.search(article, reply, re.IGNORECASE) is not None
    names = "|".join(re.escape(law) for law in sorted(laws, key=len, reverse=True))
    return re.search(rf"{article}{_GAP}(?:{names})\b", reply, re.IGNORECASE) is not None


async def names_article(
    case: Case, evidence: Evidence, *, params: NamesArticleParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the reply names an article of each required source group in its text."""
    if not case.sources.required:
        return not_applicable("the case requires no source")
    if evidence.reply is None:
        return error("the attempt has no final reply")
    if params.with_law and ctx.corpus is None:
        return error("with_law needs the corpus lookup for the law names")
    missing = []
    for group in case.sources.required:
        found = False
        for source in group:
            article = _article(source)
            if article is None:
                return error(f"source {source!r} names no article")
            article_id, label = article
            laws: list[str] = []
            if params.with_law and ctx.corpus is not None:
                unit = ctx.corpus.get(article_id)
                if unit is None or not unit.law:
                    return error(f"source {source!r} has no law name in the corpus lookup")
                laws = [unit.law, *unit.aliases]
            if _named(evidence.reply, label, laws):
                found = True
                break
        if not found:
            missing.append(" or ".join(group))
    if missing:
        return outcome(passed=False, detail=f"the reply does not name {'; '.join(missing)}")
    return outcome(passed=True, detail=f"the reply names all {len(case.sources.required)} sources")


CRITERIA = [Builtin("demo.names_article", NamesArticleParams, names_article)]
