"""The one text shortener: a character cut, a one-line detail, and a quotation cut at a word."""

from __future__ import annotations

import pytest

from soev_pipeline.text import shorten


@pytest.mark.parametrize("options", [{}, {"flatten": True}, {"at_word": True}])
def test_a_text_within_the_limit_is_returned_whole(options: dict[str, bool]) -> None:
    assert shorten("abcdef", 6, **options) == "abcdef"
    assert shorten("", 1, **options) == ""


def test_a_cut_keeps_limit_minus_one_characters_as_they_are_and_an_ellipsis() -> None:
    text = "line one\n  line two and more"

    assert shorten(text, 12) == "line one\n  …"
    assert shorten("x" * 400, 300) == "x" * 299 + "…"
    assert shorten("abcdefg", 1) == "…"


def test_flatten_makes_one_line_and_never_ends_the_cut_on_a_space() -> None:
    assert shorten("a\n\n  b\tc", 10, flatten=True) == "a b c"
    assert shorten("line one\n  line two and more", 10, flatten=True) == "line one…"
    assert shorten("one two three", 9, flatten=True) == "one two…"


def test_at_word_cuts_after_a_whole_word_and_adds_a_spaced_ellipsis() -> None:
    sentence = "De termijn: zes weken, te rekenen vanaf de dag na bekendmaking."

    assert shorten(sentence, 15, at_word=True) == "De termijn …"
    assert shorten(sentence, 23, at_word=True) == "De termijn: zes weken …"
    assert shorten("Onafgebrokenwoord", 5, at_word=True) == "Onafg …"


def test_the_limit_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        shorten("abc", 0)
