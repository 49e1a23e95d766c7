"""reply.language, reply.contains, reply.not_contains and reply.max_length."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from soev_pipeline.cli import load
from soev_pipeline.core import (
    CriterionContext,
    CriterionParamsError,
    CriterionSpec,
    LanguageDetectionError,
    LanguageDetector,
    Verdict,
)
from soev_pipeline.criteria import builtin_registry
from soev_pipeline.judges import LangidDetector
from soev_pipeline.text import letter_words, split_sentences
from tests.support.builders import ScriptedDetector, grade, make_evidence, params_error

# Replies of Dutch legal advice, full of abbreviations and article labels.
DUTCH_REPLIES = [
    "Tegen een besluit van de gemeente kunt u bezwaar maken. De termijn daarvoor is zes weken "
    "(art. 6:7 Awb). Die termijn begint op de dag na de bekendmaking, zie art. 6:8 lid 1 Awb. "
    "Stuur uw bezwaarschrift t.a.v. het college van burgemeester en wethouders. Vermeld daarin "
    "o.a. uw naam, de datum en de gronden van het bezwaar. Bent u te laat, dan verklaart het "
    "bestuursorgaan het bezwaar in beginsel niet-ontvankelijk.",
    "Volgens art. 6:162 BW moet degene die een onrechtmatige daad pleegt die hem kan worden "
    "toegerekend, de schade vergoeden. Een daad is onrechtmatig bij bijv. een inbreuk op een "
    "recht. De benadeelde moet wel aantonen dat er schade is. Daarnaast is causaal verband "
    "nodig, zie ook art. 6:98 BW.\n\nKortom: u kunt de veroorzaker aansprakelijk stellen. Doe "
    "dat schriftelijk en z.s.m. na het ongeval.",
    "## Aansprakelijkheid van de werkgever\n\nOp grond van art. 7:658 BW is de werkgever "
    "aansprakelijk voor schade die de werknemer in de uitoefening van zijn werkzaamheden lijdt. "
    "Dat geldt niet als hij aantoont dat hij zijn zorgplicht is nagekomen.\n\n"
    "- De werkgever moet zorgen voor een veilige werkplek.\n"
    "- Hij moet o.a. instructies geven en toezicht houden.\n"
    "- Bij opzet of bewuste roekeloosheid van de werknemer vervalt de aansprakelijkheid.\n\n"
    "Neem voor advies contact op met mr. J. de Vries of met het Juridisch Loket.",
    "De huurder kan de huurovereenkomst opzeggen met een termijn van één maand. De verhuurder "
    "moet m.b.t. de opzegging de gronden van art. 7:274 BW in acht nemen. Een opzegging door de "
    "verhuurder gaat per aangetekende brief of deurwaardersexploot. Zonder geldige grond eindigt "
    "de huur niet. Bij een geschil beslist de kantonrechter.",
    "Ontslag op staande voet kan alleen bij een dringende reden, zoals diefstal (art. 7:678 BW). "
    "De werkgever moet het ontslag onverwijld geven en de reden direct meedelen. Bent u het er "
    "niet mee eens? Dan kunt u binnen twee maanden de kantonrechter vragen het ontslag te "
    "vernietigen. Bewaar alle stukken en e-mails goed.",
]

MIXED_REPLY = (
    "De bezwaartermijn is zes weken (art. 6:7 Awb). "
    "However, the court may extend this period in exceptional cases. "
    "Stuur uw bezwaar t.a.v. het college van burgemeester en wethouders. "
    "Neem bij twijfel z.s.m. contact op met een advocaat. "
    "Dit is geen juridisch advies."
)


class OneByOne:
    """A detector that has only `detect`: the bundled one, asked a sentence at a time."""

    def __init__(self, detector: LangidDetector) -> None:
        self._detector = detector

    def detect(self, text: str) -> str:
        return self._detector.detect(text)


def _answer(detector: LanguageDetector, text: str) -> str | LanguageDetectionError:
    try:
        return detector.detect(text)
    except LanguageDetectionError as exc:
        return exc


def language(reply: str | None, detector: LanguageDetector | None, **params: Any) -> Verdict:
    """Grade `reply.language` with `detector`, for Dutch unless `language` says otherwise."""
    ctx = CriterionContext(language_detector=detector)
    return grade("reply.language", make_evidence(reply), ctx=ctx, **{"language": "nl", **params})


class TestLanguage:
    @pytest.mark.parametrize("reply", DUTCH_REPLIES)
    def test_dutch_legal_replies_are_dutch(self, detector: LangidDetector, reply: str) -> None:
        verdict = language(reply, detector)
        assert verdict.status == "pass", verdict.detail
        assert verdict.version == "1"

    def test_abbreviations_do_not_split_sentences(self, detector: LangidDetector) -> None:
        verdict = language(DUTCH_REPLIES[0], detector)
        assert verdict.detail == "6/6 sentences in nl (1.00)"

    def test_an_english_reply_fails_a_dutch_criterion(self, detector: LangidDetector) -> None:
        reply = "You can object within six weeks. The period starts after the decision."
        failed = language(reply, detector)
        assert failed.status == "fail"
        assert failed.detail.startswith("0/2 sentences in nl (0.00); not nl: [en] ")
        assert language(reply, detector, language="en").status == "pass"

    def test_a_mixed_reply_fails_by_default(self, detector: LangidDetector) -> None:
        verdict = language(MIXED_REPLY, detector)
        assert verdict.status == "fail"
        assert verdict.detail == (
            "4/5 sentences in nl (0.80); not nl: "
            "[en] 'However, the court may extend this period in exceptional ca…'"
        )

    @pytest.mark.parametrize(("min_share", "status"), [(0.8, "pass"), (0.81, "fail"), (0, "pass")])
    def test_min_share(self, detector: LangidDetector, min_share: float, status: str) -> None:
        assert language(MIXED_REPLY, detector, min_share=min_share).status == status

    def test_short_and_non_linguistic_sentences_do_not_count(self) -> None:
        detector = ScriptedDetector({"Het bezwaar is gegrond.": "nl"})
        reply = "Het bezwaar is gegrond. Zie art. 6:7 Awb. Ja. 12345. BWBR0005537/artikel-6:7."
        verdict = language(reply, detector)
        assert verdict.status == "pass"
        assert verdict.detail == "1/1 sentences in nl (1.00); 4 not counted"
        assert detector.asked == ["Het bezwaar is gegrond."]

    def test_a_sentence_the_detector_cannot_read_does_not_count(self) -> None:
        detector = ScriptedDetector({"Het bezwaar is gegrond.": "nl"})
        verdict = language("Het bezwaar is gegrond. Lorem ipsum dolor sit.", detector)
        assert verdict.status == "pass"
        assert verdict.detail == "1/1 sentences in nl (1.00); 1 not counted"

    def test_the_detail_lists_three_other_sentences_and_counts_the_rest(self) -> None:
        others = [f"Sentence number {word} is English." for word in ("one", "two", "three", "four")]
        detector = ScriptedDetector({sentence: "en" for sentence in others})
        verdict = language(" ".join(others), detector)
        assert verdict.status == "fail"
        assert verdict.detail.endswith("'Sentence number three is English.' and 1 more")
        assert "four" not in verdict.detail

    def test_a_detector_that_detects_many_is_asked_once_for_the_same_verdict(
        self, detector: LangidDetector
    ) -> None:
        """A detector with `detect_many` gets the reply's countable sentences in one call,
        and the verdict is the one of asking `detect` for each."""

        class Batched(ScriptedDetector):
            def __init__(self, answers: dict[str, str]) -> None:
                super().__init__(answers)
                self.batches: list[list[str]] = []

            def detect_many(self, texts: Sequence[str]) -> list[str | LanguageDetectionError]:
                self.batches.append(list(texts))
                return [_answer(self, text) for text in texts]

        sentences = ["Het bezwaar is gegrond.", "The appeal is allowed.", "Lorem ipsum dolor sit."]
        answers = {sentences[0]: "nl", sentences[1]: "en"}
        reply = " ".join(sentences) + " Zie art. 6:7 Awb."
        batched = Batched(answers)
        verdict = language(reply, batched)
        assert batched.batches == [sentences]
        assert verdict == language(reply, ScriptedDetector(answers))
        assert verdict.detail.startswith("1/2 sentences in nl (0.50); 2 not counted")
        for reply in [*DUTCH_REPLIES, MIXED_REPLY]:
            assert language(reply, detector) == language(reply, OneByOne(detector))

    def test_a_chunk_of_replies_is_detected_in_one_call(self, detector: LangidDetector) -> None:
        """`prepare` asks the detector once for the countable sentences of every reply of a
        chunk (each sentence once); grading them afterwards asks no more, and each verdict
        is the one graded without it. A reply the chunk did not hold, or another detector,
        is detected on its own."""

        class Counting:
            def __init__(self) -> None:
                self.batches: list[list[str]] = []

            @property
            def languages(self) -> frozenset[str]:
                return detector.languages

            def detect(self, text: str) -> str:
                return detector.detect(text)

            def detect_many(self, texts: Sequence[str]) -> list[str | LanguageDetectionError]:
                self.batches.append(list(texts))
                return detector.detect_many(texts)

        replies = [*DUTCH_REPLIES[:2], MIXED_REPLY, DUTCH_REPLIES[0], None]
        expected = [language(reply, detector) for reply in replies]
        counting = Counting()
        ctx = CriterionContext(language_detector=counting)
        registry = builtin_registry()
        spec = CriterionSpec(kind="reply.language", params={"language": "nl"})
        registry.prepare([(spec, make_evidence(reply)) for reply in replies], ctx)
        sentences = [
            sentence
            for reply in [*DUTCH_REPLIES[:2], MIXED_REPLY]
            for sentence in split_sentences(reply)
            if len(letter_words(sentence, 3)) == 3
        ]
        assert counting.batches == [list(dict.fromkeys(sentences))]
        assert [language(reply, counting) for reply in replies] == expected
        assert len(counting.batches) == 1
        assert language(DUTCH_REPLIES[3], counting) == language(DUTCH_REPLIES[3], detector)
        assert len(counting.batches) == 2
        scripted = ScriptedDetector({})
        assert language(DUTCH_REPLIES[0], scripted).status == "not_applicable"
        assert scripted.asked

    @pytest.mark.parametrize("reply", ["", "Art. 6:7 Awb.", "Ja. Nee. 12-03-2024.", "## Kop"])
    def test_nothing_to_detect_is_not_applicable(
        self, detector: LangidDetector, reply: str
    ) -> None:
        verdict = language(reply, detector)
        assert verdict.status == "not_applicable"
        assert "no sentence" in verdict.detail

    def test_no_reply_is_an_error(self, detector: LangidDetector) -> None:
        verdict = language(None, detector)
        assert (verdict.status, verdict.detail) == ("error", "no reply")

    def test_no_detector_is_an_error(self) -> None:
        verdict = language(DUTCH_REPLIES[0], None)
        assert verdict.status == "error"
        assert "no language detector" in verdict.detail

    def test_a_language_the_detector_cannot_detect_is_an_error(
        self, detector: LangidDetector
    ) -> None:
        verdict = language(DUTCH_REPLIES[0], detector, language="fy")
        assert verdict.status == "error"
        assert "cannot detect 'fy'" in verdict.detail

    @pytest.mark.parametrize(
        "params",
        [{}, {"language": "NL"}, {"language": "dutch"}, {"language": "nl", "min_share": 1.5}],
    )
    def test_invalid_parameters_are_refused(self, params: dict[str, Any]) -> None:
        assert "reply.language" in params_error("reply.language", **params)


class TestContains:
    EVIDENCE = make_evidence("De bezwaartermijn is zes weken (art. 6:7 Awb).")

    def test_passes_when_every_pattern_matches(self) -> None:
        verdict = grade(
            "reply.contains",
            self.EVIDENCE,
            substrings=["ZES WEKEN", "awb"],
            regex=[r"art\. 6:7\b", r"BEZWAAR\w+"],
        )
        assert (verdict.status, verdict.detail) == ("pass", "all 4 pattern(s) matched")
        assert verdict.version == "1"

    def test_fails_and_names_what_is_missing(self) -> None:
        verdict = grade(
            "reply.contains",
            self.EVIDENCE,
            substrings=["zes weken", "acht weken"],
            regex=[r"6:8"],
        )
        assert verdict.status == "fail"
        assert verdict.detail == "2 of 3 missing: substring 'acht weken', regex '6:8'"

    def test_case_sensitive(self) -> None:
        for kind in ("reply.contains", "reply.not_contains"):
            substring = grade(kind, self.EVIDENCE, substrings=["awb"], case_sensitive=True)
            pattern = grade(kind, self.EVIDENCE, regex=["ZES"], case_sensitive=True)
            assert (substring.status, pattern.status) == (
                ("fail", "fail") if kind == "reply.contains" else ("pass", "pass")
            )

    def test_not_contains_passes_when_nothing_matches(self) -> None:
        verdict = grade(
            "reply.not_contains", self.EVIDENCE, substrings=["acht weken"], regex=["6:8"]
        )
        assert (verdict.status, verdict.detail) == ("pass", "none of 2 pattern(s) matched")
        assert verdict.version == "1"

    def test_not_contains_fails_and_names_what_matched(self) -> None:
        verdict = grade(
            "reply.not_contains",
            self.EVIDENCE,
            substrings=["acht weken", "Zes Weken"],
            regex=[r"\d:7"],
        )
        assert verdict.status == "fail"
        assert verdict.detail == "2 of 3 found: substring 'Zes Weken', regex '\\\\d:7'"

    @pytest.mark.parametrize("kind", ["reply.contains", "reply.not_contains"])
    def test_no_reply_is_an_error(self, kind: str) -> None:
        verdict = grade(kind, make_evidence(None), substrings=["zes"])
        assert (verdict.status, verdict.detail) == ("error", "no reply")

    @pytest.mark.parametrize("kind", ["reply.contains", "reply.not_contains"])
    @pytest.mark.parametrize("params", [{}, {"substrings": [], "regex": []}])
    def test_without_patterns_both_kinds_pass(self, kind: str, params: dict[str, Any]) -> None:
        verdict = grade(kind, self.EVIDENCE, **params)
        assert (verdict.status, verdict.detail) == (
            "pass",
            "no patterns: the criterion has no substrings and no regex",
        )

    @pytest.mark.parametrize("kind", ["reply.contains", "reply.not_contains"])
    def test_without_patterns_no_reply_is_still_an_error(self, kind: str) -> None:
        verdict = grade(kind, make_evidence(None))
        assert (verdict.status, verdict.detail) == ("error", "no reply")

    @pytest.mark.parametrize("kind", ["reply.contains", "reply.not_contains"])
    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"substrings": [""]}, "empty substring"),
            ({"substrings": ["zes weken", ""]}, "empty substring"),
            ({"regex": ["(unclosed"]}, "invalid regular expression"),
            ({"substring": ["typo"]}, "substring"),
        ],
    )
    def test_invalid_parameters_are_refused(
        self, kind: str, params: dict[str, Any], message: str
    ) -> None:
        assert message in params_error(kind, **params)

    def test_an_invalid_regex_stops_the_project_at_load(self, tmp_path: Path) -> None:
        (tmp_path / "project.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "demo",
                    "system": {"base_url": "http://127.0.0.1:9/"},
                    "suites": [{"name": "kern", "files": "suites/*.yaml"}],
                }
            ),
            encoding="utf-8",
        )
        (tmp_path / "suites").mkdir()
        suite = tmp_path / "suites" / "kern.yaml"
        suite.write_text(
            yaml.safe_dump(
                {
                    "suite": "kern",
                    "cases": [
                        {
                            "id": "kern-007",
                            "input": "Hoe lang is de bezwaartermijn?",
                            "criteria": [{"kind": "reply.contains", "regex": ["zes (weken"]}],
                        }
                    ],
                }
            ),
            encoding="utf-8",
        )
        with pytest.raises(CriterionParamsError) as raised:
            load(tmp_path / "project.yaml")
        message = str(raised.value)
        assert str(suite) in message
        assert "case 'kern-007'" in message
        assert "invalid regular expression 'zes (weken'" in message


class TestMaxLength:
    @pytest.mark.parametrize(
        ("reply", "maximum", "status", "detail"),
        [
            ("Zes weken.", 10, "pass", "10 characters (max 10)"),
            ("Zes weken.", 9, "fail", "10 characters (max 9)"),
            ("één 👍", 5, "pass", "5 characters (max 5)"),
            ("", 0, "pass", "0 characters (max 0)"),
        ],
    )
    def test_counts_unicode_characters(
        self, reply: str, maximum: int, status: str, detail: str
    ) -> None:
        verdict = grade("reply.max_length", make_evidence(reply), max=maximum)
        assert (verdict.status, verdict.detail) == (status, detail)
        assert verdict.version == "1"

    def test_no_reply_is_an_error(self) -> None:
        verdict = grade("reply.max_length", make_evidence(None), max=10)
        assert (verdict.status, verdict.detail) == ("error", "no reply")

    @pytest.mark.parametrize("params", [{}, {"max": -1}, {"max": "veel"}])
    def test_invalid_parameters_are_refused(self, params: dict[str, Any]) -> None:
        assert "reply.max_length" in params_error("reply.max_length", **params)


class TestRegexEngine:
    """User patterns run on RE2: linear time, whatever the pattern and the reply."""

    def test_a_catastrophic_pattern_ends_at_once(self) -> None:
        """`(a+)+$` on 40 a's and a b takes Python's engine hours; here it ends at once. The
        generous wait only keeps a regression from hanging the suite."""
        reply = "a" * 40 + "b"
        verdicts: list[Verdict] = []

        def grade_both() -> None:
            for kind in ("reply.contains", "reply.not_contains"):
                regex = ["(a+)+$", "(x+x+)+y", "a{1,40}b"]
                verdicts.append(grade(kind, make_evidence(reply), regex=regex))

        worker = threading.Thread(target=grade_both, daemon=True)
        worker.start()
        worker.join(timeout=120)
        assert not worker.is_alive(), "a pattern ran away"
        contains, not_contains = verdicts
        assert (contains.status, not_contains.status) == ("fail", "fail")
        assert contains.detail == "2 of 3 missing: regex '(a+)+$', regex '(x+x+)+y'"

    @pytest.mark.parametrize(
        "pattern", [r"(zes) \1", r"weken(?= bezwaar)", r"(?<!geen )termijn", r"(?P<a>x)(?P=a)"]
    )
    def test_what_re2_cannot_take_is_refused_at_load(self, pattern: str) -> None:
        message = params_error("reply.contains", regex=[pattern])
        assert f"invalid regular expression {pattern!r}" in message
        assert "no backreferences and no lookaround" in message

    def test_case_folding_and_unicode_classes(self) -> None:
        evidence = make_evidence("De termijn is ÉÉN week.")
        assert grade("reply.contains", evidence, regex=["één"]).status == "pass"
        assert grade("reply.contains", evidence, regex=["één"], case_sensitive=True).status == (
            "fail"
        )
        assert grade("reply.contains", evidence, regex=[r"\bis [\pL]+ week"]).status == "pass"
