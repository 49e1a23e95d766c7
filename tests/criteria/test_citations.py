"""Tests of the citation kinds: sources of the case, corpus ids, quotes, article mentions."""

from __future__ import annotations

from typing import Any

import pytest

from soev_pipeline.core import Case, CriterionContext, Evidence, Verdict
from soev_pipeline.corpus import CorpusLookup, CorpusUnit
from soev_pipeline.corpus.index import QuoteIndex
from soev_pipeline.criteria import builtin_registry, citations
from soev_pipeline.criteria.builtins import kinds_of
from soev_pipeline.criteria.citations import quoted_spans
from tests.support.builders import grade, make_case, make_evidence, params_error

AWB_67 = "BWBR0005537/artikel-6:7"
AWB_68 = "BWBR0005537/artikel-6:8"
AWB_81 = "BWBR0005537/artikel-8:1"
BW_6162 = "BWBR0005289/artikel-6:162"


def awb(article: str, text: str) -> CorpusUnit:
    return CorpusUnit(
        f"BWBR0005537/artikel-{article}",
        text,
        law="Algemene wet bestuursrecht",
        aliases=("Awb",),
        article=article,
    )


def make_corpus() -> CorpusLookup:
    return CorpusLookup.from_units(
        [
            awb("6:7", "De termijn voor het indienen van een bezwaarschrift bedraagt zes weken."),
            awb("6:8", "De termijn vangt aan na de dag waarop het besluit bekend is gemaakt."),
            awb("8:1", "Een belanghebbende kan tegen een besluit beroep instellen."),
            CorpusUnit(
                BW_6162,
                "Wie een ander onrechtmatig schade toebrengt, vergoedt die schade.",
                law="Burgerlijk Wetboek Boek 6",
                aliases=("BW",),
                article="6:162",
            ),
        ]
    )


CTX = CriterionContext(corpus=make_corpus())
NO_CORPUS = CriterionContext()


def sourced(required: Any = (), forbidden: Any = ()) -> Case:
    return make_case(sources={"required": list(required), "forbidden": list(forbidden)})


def check(
    kind: str,
    evidence: Evidence,
    case: Case | None = None,
    ctx: CriterionContext = CTX,
    **params: Any,
) -> Verdict:
    """Grade with the small corpus unless `ctx` says otherwise."""
    return grade(kind, evidence, case=case, ctx=ctx, **params)


def test_the_builtin_registry_has_the_citation_kinds() -> None:
    registry = builtin_registry()
    kinds = kinds_of(citations)
    assert len(kinds) == 6
    for kind in kinds:
        assert kind.name in registry
        assert registry.version(kind.name) == "1"


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("citations.required", {"match": "fuzzy"}),
        ("citations.required", {"min": 1.5}),
        ("citations.required", {"min": -0.1}),
        ("citations.forbidden", {"match": "prefix"}),
        ("citations.unseen", {"min": 0.5}),
        ("citations.unseen", {"match": "fuzzy"}),
        ("citations.in_corpus", {"match": "exact"}),
        ("citations.quotes_verbatim", {"min": 1}),
        ("citations.mentions_in_corpus", {"law": "Awb"}),
    ],
)
def test_bad_params_fail_at_load(kind: str, params: dict[str, Any]) -> None:
    assert f"criterion {kind!r}: parameter " in params_error(kind, **params)


# citations.required


def test_required_passes_with_a_lid_under_the_article() -> None:
    verdict = check(
        "citations.required", make_evidence(citations=(f"{AWB_67}/lid-1",)), sourced([[AWB_67]])
    )
    assert (verdict.status, verdict.detail) == ("pass", "1/1 source groups met")
    assert (verdict.kind, verdict.version) == ("citations.required", "1")


def test_required_exact_refuses_the_lid() -> None:
    case = sourced([[AWB_67]])
    evidence = make_evidence(citations=(f"{AWB_67}/lid-1",))
    verdict = check("citations.required", evidence, case, match="exact")
    assert verdict.status == "fail"
    assert verdict.detail == f"0/1 source groups met; missing: [{AWB_67}]"
    assert check("citations.required", make_evidence(citations=(AWB_67,)), case).status == "pass"


def test_required_does_not_take_6_70_for_6_7() -> None:
    verdict = check(
        "citations.required",
        make_evidence(citations=("BWBR0005537/artikel-6:70",)),
        sourced([[AWB_67]]),
    )
    assert verdict.status == "fail"


def test_required_is_not_met_by_citing_the_whole_law() -> None:
    verdict = check(
        "citations.required", make_evidence(citations=("BWBR0005537",)), sourced([[AWB_67]])
    )
    assert verdict.status == "fail"


def test_required_group_is_met_by_any_of_its_ids() -> None:
    case = sourced([[AWB_67, AWB_68], [AWB_81], [BW_6162]])
    evidence = make_evidence(citations=(AWB_68, BW_6162))
    verdict = check("citations.required", evidence, case)
    assert verdict.status == "fail"
    assert verdict.detail == f"2/3 source groups met; missing: [{AWB_81}]"
    passed = check("citations.required", evidence, case, min=0.6)
    assert (passed.status, passed.detail) == (
        "pass",
        f"2/3 source groups met (min 0.6); missing: [{AWB_81}]",
    )
    assert check("citations.required", evidence, case, min=0.7).status == "fail"


def test_required_lists_the_ids_of_a_missing_group() -> None:
    verdict = check("citations.required", make_evidence(), sourced([[AWB_67, AWB_68]]))
    assert verdict.detail == f"0/1 source groups met; missing: [{AWB_67} or {AWB_68}]"


def test_required_not_applicable_without_required_sources() -> None:
    verdict = check("citations.required", make_evidence(citations=(AWB_67,)))
    assert verdict.status == "not_applicable"


def test_required_fails_without_a_reply() -> None:
    verdict = check("citations.required", make_evidence(None), sourced([[AWB_67]]))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


# citations.forbidden


def test_forbidden_fails_on_a_lid_of_a_forbidden_article() -> None:
    case = sourced(forbidden=[AWB_68])
    verdict = check(
        "citations.forbidden", make_evidence(citations=(AWB_67, f"{AWB_68}/lid-2")), case
    )
    assert verdict.status == "fail"
    assert verdict.detail == f"cites forbidden sources: {AWB_68}/lid-2 (forbidden: {AWB_68})"
    exact = check(
        "citations.forbidden",
        make_evidence(citations=(AWB_67, f"{AWB_68}/lid-2")),
        case,
        match="exact",
    )
    assert exact.status == "pass"


def test_forbidden_passes_without_a_forbidden_citation() -> None:
    case = sourced(forbidden=[AWB_67])
    verdict = check(
        "citations.forbidden", make_evidence(citations=("BWBR0005537/artikel-6:70",)), case
    )
    assert verdict.status == "pass"
    assert verdict.detail == "none of 1 cited id matches 1 forbidden source"


def test_forbidden_not_applicable_and_no_reply() -> None:
    assert check("citations.forbidden", make_evidence()).status == "not_applicable"
    verdict = check("citations.forbidden", make_evidence(None), sourced(forbidden=[AWB_67]))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


# citations.in_corpus


def test_in_corpus_passes_for_corpus_ids() -> None:
    verdict = check("citations.in_corpus", make_evidence(citations=(AWB_67, BW_6162, AWB_67)))
    assert (verdict.status, verdict.detail) == ("pass", "every cited id (2) is in the corpus")


def test_in_corpus_is_exact_a_lid_of_a_corpus_article_is_not_in_it() -> None:
    evidence = make_evidence(citations=(AWB_67, f"{AWB_67}/lid-1", "BWBR9999999/artikel-1"))
    verdict = check("citations.in_corpus", evidence)
    assert verdict.status == "fail"
    assert verdict.detail == (
        f"2/3 cited ids are not in the corpus: {AWB_67}/lid-1, BWBR9999999/artikel-1"
    )


def test_in_corpus_error_not_applicable_and_no_reply() -> None:
    verdict = check("citations.in_corpus", make_evidence(citations=(AWB_67,)), ctx=NO_CORPUS)
    assert verdict.status == "error"
    assert "no corpus" in verdict.detail
    assert check("citations.in_corpus", make_evidence()).status == "not_applicable"
    assert check("citations.in_corpus", make_evidence(), ctx=NO_CORPUS).status == "not_applicable"
    verdict = check("citations.in_corpus", make_evidence(None))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


# citations.unseen


def test_unseen_lists_ids_without_a_source_role() -> None:
    case = sourced([[AWB_67]], [AWB_68])
    evidence = make_evidence(citations=(f"{AWB_67}/lid-1", AWB_68, AWB_81, BW_6162))
    verdict = check("citations.unseen", evidence, case)
    assert verdict.status == "pass"
    assert verdict.detail == (
        f"2/4 cited ids without a source role (for adjudication): {AWB_81}, {BW_6162}"
    )
    exact = check("citations.unseen", evidence, case, match="exact")
    assert exact.status == "pass"
    assert f"3/4 cited ids without a source role (for adjudication): {AWB_67}/lid-1" in exact.detail


def test_unseen_always_passes() -> None:
    case = sourced([[AWB_67]])
    assert check("citations.unseen", make_evidence(citations=(AWB_67,)), case).detail == (
        "every cited id (1) has a source role"
    )
    assert check("citations.unseen", make_evidence(), case).detail == "the reply cites nothing"
    verdict = check("citations.unseen", make_evidence(None), case)
    assert (verdict.status, verdict.detail) == ("pass", "no reply: nothing cited")


# citations.quotes_verbatim


def test_quoted_spans_of_three_styles() -> None:
    reply = (
        'Ascii "een" en “twee” en „drie” en „vier“ en “vijf“; niet \'zes\' en "…", nog eens "een".'
    )
    assert quoted_spans(reply) == ["een", "twee", "drie", "vier", "vijf"]


@pytest.mark.parametrize(
    "reply",
    [
        'De wet zegt: "De termijn voor het indienen van een bezwaarschrift bedraagt zes weken."',
        "De wet zegt: “de termijn voor het\n   indienen van een bezwaarschrift”.",
        "De wet zegt: „bedraagt  zes weken”, en „Een belanghebbende kan tegen een besluit“.",
        'Kort: "zes weken" … "De termijn … zes weken".',
    ],
)
def test_quotes_verbatim_passes(reply: str) -> None:
    verdict = check("citations.quotes_verbatim", make_evidence(reply))
    assert verdict.status == "pass", verdict.detail


def test_quotes_verbatim_fails_and_names_the_missing_quotes() -> None:
    reply = (
        'De wet zegt "De termijn bedraagt zes weken" en "zes weken" en '
        "„de termijn voor het indienen van een bezwaarschrift of een beroepschrift bedraagt "
        "in alle gevallen zes weken”."
    )
    verdict = check("citations.quotes_verbatim", make_evidence(reply))
    assert verdict.status == "fail"
    assert verdict.detail == (
        '2/3 quotes are in no corpus unit: "De termijn bedraagt zes weken", '
        '"de termijn voor het indienen van een bezwaarschrift of een…"'
    )


def test_quotes_verbatim_a_quote_across_two_units_fails() -> None:
    reply = '"bedraagt zes weken. De termijn vangt aan"'
    assert check("citations.quotes_verbatim", make_evidence(reply)).status == "fail"


def test_quotes_verbatim_checks_a_one_word_quote() -> None:
    assert check("citations.quotes_verbatim", make_evidence('Het "besluit".')).status == "pass"
    assert check("citations.quotes_verbatim", make_evidence('Het "vonnis".')).status == "fail"


def test_quotes_verbatim_not_applicable_error_and_no_reply() -> None:
    plain = make_evidence("Zes weken, zie 'termijn'.")
    assert check("citations.quotes_verbatim", plain).status == "not_applicable"
    assert check("citations.quotes_verbatim", plain, ctx=NO_CORPUS).status == "not_applicable"
    quoted = make_evidence('"zes weken"')
    verdict = check("citations.quotes_verbatim", quoted, ctx=NO_CORPUS)
    assert verdict.status == "error"
    assert "no corpus" in verdict.detail
    verdict = check("citations.quotes_verbatim", make_evidence(None))
    assert (verdict.status, verdict.detail) == ("error", "no reply")


def test_the_quote_index_is_built_once_for_all_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    original = QuoteIndex.build

    def counting(ids: list[str], texts: list[str]) -> QuoteIndex:
        builds.append(len(ids))
        return original(ids, texts)

    monkeypatch.setattr(QuoteIndex, "build", counting)
    ctx = CriterionContext(corpus=make_corpus())
    for reply in ['"zes weken"', '"een besluit"', '"verzonnen"']:
        check("citations.quotes_verbatim", make_evidence(reply), ctx=ctx)
    assert builds == [4]


# citations.mentions_in_corpus


@pytest.mark.parametrize(
    "reply",
    [
        "Volgens artikel 6:7 Awb is de termijn zes weken.",
        "Zie art. 6:162 BW.",
        "Dat staat in artikel 8:1, eerste lid, van de Algemene wet bestuursrecht.",
        "De artikelen 6:7 en 6:8 Awb regelen de termijn, en artikel 6:162 BW de schade.",
        "Artikel 6:8 van de Awb. Artikel 6:7 bepaalt verder de lengte.",
    ],
)
def test_mentions_in_corpus_passes(reply: str) -> None:
    verdict = check("citations.mentions_in_corpus", make_evidence(reply))
    assert verdict.status == "pass", verdict.detail


def test_mentions_in_corpus_counts_references_without_a_law() -> None:
    reply = "Artikel 6:8 van de Awb. Artikel 6:7 bepaalt verder de lengte."
    verdict = check("citations.mentions_in_corpus", make_evidence(reply))
    assert verdict.detail == (
        "every article mention (1) resolves to a corpus unit; 1 reference without a law not checked"
    )


def test_mentions_in_corpus_fails_on_an_unknown_law_and_article() -> None:
    reply = "Zie artikel 6:7 Awb, artikel 3 lid 2 Wet Fantasie en artikel 6:99 Awb."
    verdict = check("citations.mentions_in_corpus", make_evidence(reply))
    assert verdict.status == "fail"
    assert verdict.detail == (
        "2/3 article mentions do not resolve: artikel 3 lid 2 Wet Fantasie (law not in the "
        "corpus), artikel 6:99 Awb (no article 6:99 of Awb)"
    )


def test_mentions_in_corpus_not_applicable_error_and_no_reply() -> None:
    for reply in ["Zes weken.", "Artikel 6:7 bepaalt de termijn."]:
        verdict = check("citations.mentions_in_corpus", make_evidence(reply))
        assert verdict.status == "not_applicable"
    assert check("citations.mentions_in_corpus", make_evidence(), ctx=NO_CORPUS).status == (
        "not_applicable"
    )
    verdict = check(
        "citations.mentions_in_corpus", make_evidence("Zie artikel 6:7 Awb."), ctx=NO_CORPUS
    )
    assert verdict.status == "error"
    verdict = check("citations.mentions_in_corpus", make_evidence(None))
    assert (verdict.status, verdict.detail) == ("error", "no reply")
