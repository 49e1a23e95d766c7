"""The answering policy, the retrieval under it, and the bundled corpus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from soev_pipeline.corpus import CorpusLookup, CorpusUnit
from soev_pipeline.reference import DEFAULT_MESSAGES, Assistant, Retriever, bundled_corpus, tokenize
from soev_pipeline.reference.assistant import MAX_QUOTE, best_sentence, mention, shorten
from soev_pipeline.reference.retrieval import MENTION_BOOST, mentioned_labels
from soev_pipeline.reference.screening import asks_for_personal_data

DEMO_CORPUS = Path(__file__).parents[2] / "examples" / "demo" / "corpus.jsonl"


@pytest.fixture(scope="module")
def assistant() -> Assistant:
    return Assistant()


def test_tokenize_folds_case_and_diacritics_and_drops_punctuation_and_stopwords() -> None:
    assert tokenize("Wat zegt artikel 6:162 BW over de BEËINDIGING, van termijnen?") == [
        "artikel",
        "6:162",
        "bw",
        "beeindiging",
        "termijn",
    ]


def test_article_labels_are_found_with_and_without_the_word_artikel() -> None:
    assert mentioned_labels("artikel 6:7 Awb en art. 10 Grondwet, zie 7:658") == {
        "6:7",
        "10",
        "7:658",
    }
    assert mentioned_labels("Hoe lang duurt het, 12 weken?") == set()


def test_a_named_article_wins_over_every_plain_match() -> None:
    retriever = Retriever(bundled_corpus())

    hits = retriever.search("Wat zegt artikel 6:8 Awb over de termijn voor bezwaar?")

    assert hits[0].unit.id == "BWBR0005537/artikel-6:8"
    assert hits[0].score > MENTION_BOOST
    assert hits[1].score < MENTION_BOOST


def test_when_two_laws_share_a_label_the_named_law_wins() -> None:
    units = [
        CorpusUnit("A/artikel-5", "Regels over vissen in open water.", "Viswet", ("Vw",), "5"),
        CorpusUnit("B/artikel-5", "Regels over jagen in het bos.", "Jachtwet", (), "5"),
    ]
    retriever = Retriever(units)

    assert retriever.search("artikel 5 Jachtwet")[0].unit.id == "B/artikel-5"
    assert retriever.search("artikel 5 Vw")[0].unit.id == "A/artikel-5"
    assert {hit.unit.id for hit in retriever.search("artikel 5")} == {"A/artikel-5", "B/artikel-5"}


def test_compounds_meet_their_parts() -> None:
    retriever = Retriever(bundled_corpus())

    hits = retriever.search("Wat is de bezwaartermijn?")

    assert hits[0].unit.id == "BWBR0005537/artikel-6:7"


def test_an_answer_quotes_a_sentence_of_the_unit_verbatim_and_cites_it(
    assistant: Assistant,
) -> None:
    reply = assistant.answer("Wanneer verjaart een schadevordering?")

    assert reply.kind == "answer"
    assert reply.hits is not None
    cited = reply.hits[reply.citations[0].hit].unit
    assert cited.id == "BWBR0005291/artikel-3:310"
    assert reply.content.startswith("Volgens artikel 3:310 BW: ")
    quoted = re.findall(r'"([^"]+)"', reply.content)
    assert quoted
    assert quoted[0] in cited.text
    assert reply.content[: reply.citations[0].at].endswith(f'"{quoted[0]}"')
    assert reply.prompt_tokens > reply.completion_tokens > 0


def test_a_close_runner_up_is_named_and_cited_too(assistant: Assistant) -> None:
    reply = assistant.answer("Mag de overheid mij discrimineren?")

    assert reply.hits is not None
    cited = [reply.hits[citation.hit].unit.id for citation in reply.citations]
    assert cited == ["BWBR0001840/artikel-23", "BWBR0001840/artikel-1"]
    assert reply.content.endswith(" Zie ook artikel 1 Grondwet.")
    assert reply.citations[1].at == len(reply.content)


def test_a_long_sentence_is_shortened_with_an_ellipsis() -> None:
    long = " ".join(["woord"] * 80) + "."

    short = shorten(long)

    assert short.endswith(" …")
    assert len(short) <= MAX_QUOTE + 2
    assert long.startswith(short.removesuffix(" …"))
    assert shorten("Kort.") == "Kort."


def test_the_quote_prefers_the_sentence_that_matches_and_skips_short_remarks() -> None:
    text = "Eerste zin over iets anders dan de vraag hier. Dit heet overmacht."

    assert (
        best_sentence(text, "Wat is overmacht?") == "Eerste zin over iets anders dan de vraag hier."
    )
    assert best_sentence("Een. Twee woorden over de huur hier vandaag.", "huur") == (
        "Twee woorden over de huur hier vandaag."
    )


def test_mentions_use_the_alias_of_a_long_law_name() -> None:
    corpus = bundled_corpus()

    assert mention(corpus.units["BWBR0005537/artikel-6:7"]) == "artikel 6:7 Awb"
    assert mention(corpus.units["BWBR0005290/artikel-7:658"]) == "artikel 7:658 BW"
    assert mention(corpus.units["BWBR0001840/artikel-10"]) == "artikel 10 Grondwet"


@pytest.mark.parametrize(
    "question",
    [
        "Mijn BSN is 111222333.",
        "Mijn burgerservicenummer is 1112.22.333.",
        "Stort het op NL91 ABNA 0417 1643 00.",
        "Bel +31 6 12345678.",
        "Bel 020-1234567.",
        "Mail piet.jansen@example.nl.",
        "Waar woont mijn ex?",
        "Wat is de geboortedatum van Piet?",
    ],
)
def test_personal_data_is_recognised(question: str) -> None:
    assert asks_for_personal_data(question)


@pytest.mark.parametrize(
    "question",
    [
        "Welke regels gelden voor het vastleggen van persoonsgegevens?",
        "Binnen welke termijn moet ik bezwaar maken?",
        "Wat zegt artikel 6:162 BW?",
        "Is 2024 een schrikkeljaar?",
    ],
)
def test_legal_questions_are_not_personal_data(question: str) -> None:
    assert not asks_for_personal_data(question)


def test_a_refusal_is_exactly_the_privacy_message_without_search(assistant: Assistant) -> None:
    reply = assistant.answer("Mijn BSN is 111222333, kan ik bezwaar maken?")

    assert (reply.kind, reply.content) == ("refuse", DEFAULT_MESSAGES["privacy"])
    assert reply.hits is None
    assert reply.citations == ()


def test_off_topic_and_weak_matches_abstain_but_a_named_article_answers(
    assistant: Assistant,
) -> None:
    off_topic = assistant.answer("Hoe bak ik een appeltaart?")
    weak = assistant.answer("Wat is de straf voor diefstal volgens het Wetboek van Strafrecht?")
    named = assistant.answer("Wat zegt artikel 10 Grondwet over het weerbericht?")

    assert (off_topic.kind, off_topic.content) == ("abstain", DEFAULT_MESSAGES["out_of_scope"])
    assert weak.kind == "abstain"
    assert weak.hits
    assert weak.hits[0].score < 4.0
    assert named.kind == "answer"


def test_a_follow_up_searches_with_the_question_just_before_it_only(
    assistant: Assistant,
) -> None:
    first = "Binnen welke termijn moet ik bezwaar maken?"
    second = "Wanneer begint die termijn?"
    third = "En wat als ik te laat ben?"

    with_all = assistant.answer(third, [first, second])
    with_last = assistant.answer(third, [second])

    assert with_all.content == with_last.content
    assert with_all.prompt_tokens > with_last.prompt_tokens
    assert with_all.hits is not None
    assert with_all.hits[0].unit.id == "BWBR0005291/artikel-3:307"


def test_the_assistant_needs_both_messages() -> None:
    with pytest.raises(ValueError, match="out_of_scope"):
        Assistant(messages={"privacy": "Nee."})


def test_an_assistant_reads_another_corpus() -> None:
    corpus = CorpusLookup.from_units(
        [
            CorpusUnit("X/artikel-1", "De kat mag altijd op de bank liggen.", "Katwet", (), "1"),
            CorpusUnit("X/artikel-2", "De hond blijft in de mand.", "Katwet", (), "2"),
            CorpusUnit("X/artikel-3", "Vissen blijven in de kom.", "Katwet", (), "3"),
        ]
    )

    reply = Assistant(corpus, min_score=1.0).answer("Mag de kat op de bank liggen?")
    strict = Assistant(corpus).answer("Mag de kat op de bank liggen?")

    assert reply.content == 'Volgens artikel 1 Katwet: "De kat mag altijd op de bank liggen."'
    assert strict.kind == "abstain"


def test_the_bundled_corpus_has_paraphrased_articles_of_four_laws() -> None:
    corpus = bundled_corpus()

    assert len(corpus) >= 60
    regulations = {unit.id.split("/")[0] for unit in corpus}
    assert regulations == {
        "BWBR0005537",
        "BWBR0005289",
        "BWBR0005290",
        "BWBR0005291",
        "BWBR0001840",
    }
    for unit in corpus:
        assert unit.id == f"{unit.id.split('/')[0]}/artikel-{unit.article}"
        assert unit.law
        assert unit.text.endswith(".")
        assert '"' not in unit.text
    assert "zes weken" in corpus.units["BWBR0005537/artikel-6:7"].text


def test_the_demo_ships_the_bundled_corpus() -> None:
    bundled = Path(__file__).parents[2] / "soev_pipeline" / "reference" / "corpus.jsonl"

    assert DEMO_CORPUS.read_bytes() == bundled.read_bytes()
