"""Compare criteria over the variants of a case: `compare.same_citations`.

`compare.equivalent`, which asks a judge, lives with the other judge kinds in `judged`.
"""

from __future__ import annotations

from soev_pipeline.core.models import Case, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.corpus.sources import article_of, unique

from .kind import NoParams, criterion
from .verdicts import error, not_applicable, outcome


def cited_articles(citations: tuple[str, ...]) -> frozenset[str]:
    """The articles of `citations` (docs/project.md#source-ids): a lid cites its article."""
    return frozenset(article_of(source) for source in unique(citations))


def _difference(base: frozenset[str], variant: frozenset[str]) -> str:
    parts = []
    if only_base := sorted(base - variant):
        parts.append(f"only base: {', '.join(only_base)}")
    if only_variant := sorted(variant - base):
        parts.append(f"only variant: {', '.join(only_variant)}")
    return "; ".join(parts)


@criterion(
    "compare.same_citations",
    NoParams,
    needs=(),
    summary=(
        "each variant cites the same set of articles as the base case; "
        "not applicable without variants"
    ),
    example={"kind": "compare.same_citations"},
)
async def same_citations(
    case: Case, evidence: Evidence, *, params: NoParams, ctx: CriterionContext
) -> Verdict:
    """Pass when every variant cites the same set of articles as the base case.

    A variant without a reply (its thread failed) or without evidence differs: the
    comparison needs both answers. The base case without a reply is an error ("no reply").
    """
    if not case.variants:
        return not_applicable("the case has no variants")
    if evidence.reply is None:
        return error("no reply")
    base = cited_articles(evidence.citations)
    answered = {variant.id: variant for variant in evidence.variants}
    differing: list[str] = []
    for variant in case.variants:
        found = answered.get(variant.id)
        if found is None:
            differing.append(f"{variant.id}: no evidence")
        elif found.reply is None:
            differing.append(f"{variant.id}: no reply")
        elif (articles := cited_articles(found.citations)) != base:
            differing.append(f"{variant.id}: {_difference(base, articles)}")
    if differing:
        return outcome(
            passed=False,
            detail=f"{len(differing)}/{len(case.variants)} variants differ: "
            + " | ".join(differing),
        )
    return outcome(
        passed=True,
        detail=(
            f"every variant ({len(case.variants)}) cites the same "
            f"{len(base)} article{'' if len(base) == 1 else 's'} as the base"
        ),
    )
