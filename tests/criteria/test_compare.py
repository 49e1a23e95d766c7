"""Tests of compare.same_citations: the variants cite the articles of the base case."""

from __future__ import annotations

from typing import Any

from soev_pipeline.core import Case, Evidence, Verdict
from soev_pipeline.criteria import builtin_registry
from soev_pipeline.criteria.compare import cited_articles
from tests.support.builders import grade, make_case, make_evidence, make_variant

AWB_67 = "BWBR0005537/artikel-6:7"
AWB_68 = "BWBR0005537/artikel-6:8"


def with_variants(count: int = 2) -> Case:
    return make_case(
        variants=[{"id": f"kern-001-{n}", "input": f"Parafrase {n}?"} for n in range(count)]
    )


def cited(
    citations: tuple[str, ...], *variants: tuple[str, ...] | None, reply: str | None = "Ja."
) -> Evidence:
    """Evidence whose base cites `citations` and whose n-th variant cites `variants[n]`.

    A variant of None gave no reply.
    """
    return make_evidence(
        reply,
        citations=citations,
        variants=[
            make_variant(f"kern-001-{n}", None if cites is None else "Ja.", cites or ())
            for n, cites in enumerate(variants)
        ],
    )


def check(case: Case, evidence: Evidence, **params: Any) -> Verdict:
    return grade("compare.same_citations", evidence, case=case, **params)


def test_cited_articles_lift_lids_to_their_article() -> None:
    assert cited_articles((f"{AWB_67}/lid-1", AWB_67, f"{AWB_68}/lid-2/")) == {AWB_67, AWB_68}


def test_passes_when_lids_cite_the_same_articles() -> None:
    evidence = cited((AWB_67, AWB_68), (f"{AWB_67}/lid-1", AWB_68), (AWB_68, AWB_67))
    verdict = check(with_variants(), evidence)
    assert (verdict.status, verdict.detail) == (
        "pass",
        "every variant (2) cites the same 2 articles as the base",
    )
    assert (verdict.kind, verdict.version) == ("compare.same_citations", "1")
    assert "compare.same_citations" in builtin_registry()


def test_fails_and_names_the_differing_variant_and_difference() -> None:
    evidence = cited((AWB_67, AWB_68), (AWB_67, AWB_68), (AWB_67, "BWBR1/artikel-2"))
    verdict = check(with_variants(), evidence)
    assert verdict.status == "fail"
    assert verdict.detail == (
        f"1/2 variants differ: kern-001-1: only base: {AWB_68}; only variant: BWBR1/artikel-2"
    )


def test_a_variant_without_reply_or_evidence_differs() -> None:
    verdict = check(with_variants(3), cited((AWB_67,), (AWB_67,), None))
    assert verdict.status == "fail"
    assert verdict.detail == "2/3 variants differ: kern-001-1: no reply | kern-001-2: no evidence"


def test_not_applicable_without_variants_and_fail_without_reply() -> None:
    assert check(with_variants(0), cited((AWB_67,))).status == "not_applicable"
    verdict = check(with_variants(), cited((), (), (), reply=None))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


def test_nothing_cited_anywhere_is_the_same() -> None:
    assert check(with_variants(), cited((), (), ())).status == "pass"
