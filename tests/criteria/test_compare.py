"""Tests of compare.same_citations: the variants cite the articles of the base case."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from soev_pipeline.core.models import Case, CriterionSpec, Evidence, VariantEvidence, Verdict
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.criteria import CriterionRegistry, builtin_registry
from soev_pipeline.criteria.compare import KINDS, cited_articles

AWB_67 = "BWBR0005537/artikel-6:7"
AWB_68 = "BWBR0005537/artikel-6:8"
REGISTRY = CriterionRegistry(KINDS)


def make_case(variants: int = 2) -> Case:
    return Case.model_validate(
        {
            "id": "kern-001",
            "suite": "kern",
            "input": "Hoe lang heb ik voor bezwaar?",
            "variants": [
                {"id": f"kern-001-{n}", "input": f"Parafrase {n}?"} for n in range(variants)
            ],
        }
    )


def make_evidence(
    citations: tuple[str, ...], *variants: tuple[str, ...] | None, reply: str | None = "Ja."
) -> Evidence:
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    return Evidence(
        case_id="kern-001",
        suite="kern",
        split="dev",
        attempt=0,
        reply=reply,
        citations=citations,
        variants=tuple(
            VariantEvidence(
                id=f"kern-001-{n}",
                reply=None if cited is None else "Ja.",
                citations=cited or (),
            )
            for n, cited in enumerate(variants)
        ),
        started_at=moment,
        finished_at=moment,
    )


def grade(case: Case, evidence: Evidence, **params: Any) -> Verdict:
    spec = CriterionSpec.model_validate({"kind": "compare.same_citations", **params})
    return asyncio.run(REGISTRY.evaluate(spec, case, evidence, CriterionContext()))


def test_cited_articles_lift_lids_to_their_article() -> None:
    assert cited_articles((f"{AWB_67}/lid-1", AWB_67, f"{AWB_68}/lid-2/")) == {AWB_67, AWB_68}


def test_passes_when_lids_cite_the_same_articles() -> None:
    evidence = make_evidence((AWB_67, AWB_68), (f"{AWB_67}/lid-1", AWB_68), (AWB_68, AWB_67))
    verdict = grade(make_case(), evidence)
    assert (verdict.status, verdict.detail) == (
        "pass",
        "every variant (2) cites the same 2 articles as the base",
    )
    assert (verdict.kind, verdict.version) == ("compare.same_citations", "1")
    assert "compare.same_citations" in builtin_registry()


def test_fails_and_names_the_differing_variant_and_difference() -> None:
    evidence = make_evidence((AWB_67, AWB_68), (AWB_67, AWB_68), (AWB_67, "BWBR1/artikel-2"))
    verdict = grade(make_case(), evidence)
    assert verdict.status == "fail"
    assert verdict.detail == (
        f"1/2 variants differ: kern-001-1: only base: {AWB_68}; only variant: BWBR1/artikel-2"
    )


def test_a_variant_without_reply_or_evidence_differs() -> None:
    verdict = grade(make_case(3), make_evidence((AWB_67,), (AWB_67,), None))
    assert verdict.status == "fail"
    assert verdict.detail == "2/3 variants differ: kern-001-1: no reply | kern-001-2: no evidence"


def test_not_applicable_without_variants_and_fail_without_reply() -> None:
    assert grade(make_case(0), make_evidence((AWB_67,))).status == "not_applicable"
    verdict = grade(make_case(), make_evidence((), (), (), reply=None))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


def test_nothing_cited_anywhere_is_the_same() -> None:
    assert grade(make_case(), make_evidence((), (), ())).status == "pass"
