"""Text from the wire made safe: lone surrogates replaced, control characters escaped."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from soev_pipeline.core.chars import printable, scrub, scrub_tree, xml_safe
from soev_pipeline.core.models import Evidence, Failure, Turn, Verdict

HALF_EMOJI = json.loads('"half \\ud83d emoji"')


def test_a_lone_surrogate_is_replaced_and_a_split_pair_is_joined() -> None:
    assert scrub(HALF_EMOJI) == "half \ufffd emoji"
    assert scrub("\udc80 and \ud800") == "\ufffd and \ufffd"
    assert scrub("\ud83d\ude00") == "😀"
    for text in ("plain", "bezwaar binnen zes weken: één termijn 😀"):
        assert scrub(text) is text


def test_scrub_tree_reaches_every_string() -> None:
    tree = {"a\ud800": ["x\udfff", ("y", 1, None)], "n": 2.5}
    assert scrub_tree(tree) == {"a\ufffd": ["x\ufffd", ("y", 1, None)], "n": 2.5}


def test_models_made_in_python_scrub_what_the_wire_may_fill() -> None:
    """An arm of a runtime provider that passes a lone surrogate on cannot stop the archive."""
    turn = Turn(
        input="vraag",
        reply=HALF_EMOJI,
        citations=("ref\ud800",),
        failure=Failure(code="x\ud800", detail=HALF_EMOJI),
    )
    evidence = Evidence(case_id="c", turns=(turn,), reply=HALF_EMOJI, citations=("a\udc00",))
    line = evidence.model_dump_json()
    assert "\ufffd" in line and Evidence.model_validate_json(line).reply == "half \ufffd emoji"
    assert Verdict(status="pass", detail=HALF_EMOJI).model_dump_json()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("rood \x1b[31mtekst\x1b[0m", "rood \\x1b[31mtekst\\x1b[0m"),
        ("nul\x00een\x01", "nul\\x00een\\x01"),
        ("csi \x9b2J del \x7f", "csi \\x9b2J del \\x7f"),
        ("omgekeerd \u202etxt.exe", "omgekeerd \\u202etxt.exe"),
        ("regel\nregel\ttab\rterug", "regel\nregel\ttab\\x0dterug"),
        ("half \ud800", "half \\ud800"),
        ("één 😀 §", "één 😀 §"),
    ],
)
def test_printable_escapes_what_a_terminal_would_obey(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_on_one_line_escapes_line_breaks_too() -> None:
    assert printable("a\nb\tc", keep="") == "a\\x0ab\\x09c"


def test_xml_safe_text_makes_well_formed_xml() -> None:
    hostile = "nul\x00 esc\x1b[2J vt\x0b ff\x0c half\ud800 non\ufffe csi\x9b ok\t\n\r"
    element = ET.Element("failure", message=xml_safe(hostile))
    element.text = xml_safe(hostile)
    document = ET.tostring(element, encoding="utf-8")
    parsed = ET.fromstring(document)  # raises on a character XML 1.0 refuses
    assert parsed.text is not None and "\\x1b[2J" in parsed.text and "\x1b" not in parsed.text
    assert "\\ud800" in parsed.text and "\\ufffe" in parsed.text and "\\x9b" in parsed.text
