"""Dutch personal identifiers: each kind found with its check, and a near miss for each."""

from __future__ import annotations

import re

import phonenumbers
import pytest
from phonenumbers.phonenumberutil import _VALID_PUNCTUATION

from soev_pipeline.text import (
    IDENTIFIER_KINDS,
    SIDECODES,
    IdentifierKind,
    find_identifiers,
    mask,
)
from soev_pipeline.text.dates import _BIRTH_LETTERS, _BIRTH_WORDS
from soev_pipeline.text.identifiers import (
    _DIGIT_OR_AT,
    _DOCUMENT_LETTERS,
    _DOCUMENT_WORDS,
    _PHONE_DIGITS,
    _PHONE_MIN_DIGITS,
    _phones,
    _service_types,
)
from soev_pipeline.text.proximity import holds_any


def found(text: str, kinds: tuple[IdentifierKind, ...] = IDENTIFIER_KINDS) -> list[tuple[str, str]]:
    return [(identifier.kind, identifier.value) for identifier in find_identifiers(text, kinds)]


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("Mijn BSN is 111222333.", "bsn", "111222333"),
        ("Nummer 123456782 staat op de brief.", "bsn", "123456782"),
        ("Burgerservicenummer: 1112.22.333", "bsn", "1112.22.333"),
        ("Mijn bsn is 11122304.", "bsn", "11122304"),
        ("Maak het over op NL91ABNA0417164300.", "iban", "NL91ABNA0417164300"),
        ("Rekening NL91 ABNA 0417 1643 00 BV, ten name van mij.", "iban", "NL91 ABNA 0417 1643 00"),
        (
            "Een Duitse rekening: DE89 3704 0044 0532 0130 00.",
            "iban",
            "DE89 3704 0044 0532 0130 00",
        ),
        (
            "Mail naar jan.de-vries+werk@voorbeeld.nl voor info.",
            "email",
            "jan.de-vries+werk@voorbeeld.nl",
        ),
        ("Bel me op 06-12345678.", "nl_phone", "06-12345678"),
        ("Bel me op +31 (0)20 123 4567.", "nl_phone", "+31 (0)20 123 4567"),
        ("Bel me op 0031 6 1234 5678.", "nl_phone", "0031 6 1234 5678"),
        ("Mijn nummer is +31 612345678.", "nl_phone", "+31 612345678"),
        ("Ik woon op 2511 CV in Den Haag.", "postcode", "2511 CV"),
        ("Postcode 2511CV.", "postcode", "2511CV"),
        ("Ik ben geboren op 12-03-1985.", "birthdate", "12-03-1985"),
        ("Geboortedatum: 12 maart 1985.", "birthdate", "12 maart 1985"),
        ("Geb. 1985-03-12 te Utrecht.", "birthdate", "1985-03-12"),
        ("Date of birth 29 Feb 1988.", "birthdate", "29 Feb 1988"),
        ("Mijn paspoortnummer is XR1001R58.", "id_number", "XR1001R58"),
        ("Het documentnummer van mijn ID-kaart: IZ12AB345.", "id_number", "IZ12AB345"),
        ("Mijn auto heeft GB-12-34 als nummer.", "license_plate", "GB-12-34"),
        ("De auto 12-BGT-3 stond fout.", "license_plate", "12-BGT-3"),
        ("De auto met kenteken GBX12T stond fout.", "license_plate", "GBX12T"),
    ],
)
def test_each_kind_is_found(text: str, kind: str, value: str) -> None:
    assert found(text) == [(kind, value)]


@pytest.mark.parametrize(
    "text",
    [
        "Mijn BSN is 123456789.",
        "Rekening NL91ABNA0417164301.",
        "Rekening NL91 ABNA 0417 1643 01.",
        "Mail naar jan.devries@ of @voorbeeld.nl.",
        "Bel 06-1234567 of 112.",
        "Bel het Juridisch Loket op 0900-8020, gratis 0800-0123 of de gemeente op 14 020.",
        "Postcode 2511 SA of 0511 CV.",
        "Het vonnis is van 12-03-1985.",
        "Ik ben geboren op 31-02-1985.",
        "Mijn paspoortnummer is XR1O01R58.",
        "De code XR1001R58 staat in de brief.",
        "Het nummer AE-12-34 en SS-12-34 en KKK-12-B.",
        "De code GBX12T staat in de brief.",
        "Zie art. 6:162 BW, BWBR0005537/artikel-6:7 en ECLI:NL:HR:2019:1234.",
        "Kamerstukken II 2019/20, 35 300 VI, nr. 4; Stb. 2021, 123.",
    ],
)
def test_near_misses_are_not_identifiers(text: str) -> None:
    assert found(text) == []


def test_a_bsn_keyword_in_the_previous_sentence_does_not_count() -> None:
    assert found("Uw BSN staat op de brief. Kenmerk 11122304 graag vermelden.") == []


def test_a_birth_keyword_in_the_previous_sentence_does_not_count() -> None:
    text = "Ik ben geboren op 12-03-1985. Het vonnis is van 14-06-2019."
    assert found(text) == [("birthdate", "12-03-1985")]


def test_iban_and_bsn_digits_are_never_read_as_phone_numbers() -> None:
    text = "IBAN NL91 ABNA 0417 1643 00, BSN 111222333, tel 020-1234567."
    assert found(text, ("nl_phone",)) == [("nl_phone", "020-1234567")]
    assert found(text) == [
        ("iban", "NL91 ABNA 0417 1643 00"),
        ("bsn", "111222333"),
        ("nl_phone", "020-1234567"),
    ]


def test_a_claimed_span_does_not_hide_a_phone_number_next_to_it() -> None:
    # Read as one run of digits, the phone number and the BSN are no valid number at all.
    assert found("Tel 020 123 4567 111222333") == [
        ("nl_phone", "020 123 4567"),
        ("bsn", "111222333"),
    ]


def test_only_the_asked_kinds_are_returned_in_text_order() -> None:
    text = "Mail a@b.nl, postcode 2511 CV, BSN 111222333."
    assert found(text, ("bsn", "postcode")) == [("postcode", "2511 CV"), ("bsn", "111222333")]


def test_a_foreign_phone_number_is_not_a_dutch_one() -> None:
    assert found("Call +44 20 7946 0958.") == []


@pytest.mark.parametrize(
    ("kind", "value", "masked"),
    [
        ("bsn", "111222333", "1112*****"),
        ("bsn", "1112.22.333", "1112*****"),
        ("iban", "NL91 ABNA 0417 1643 00", "NL91****4300"),
        ("email", "jan@voorbeeld.nl", "j***@***.nl"),
        ("nl_phone", "06-12345678", "061*****78"),
        ("postcode", "2511 CV", "25****"),
        ("birthdate", "12 maart 1985", "** maart ****"),
        ("id_number", "XR1001R58", "XR*******"),
        ("license_plate", "GB-12-34", "GB-**-**"),
    ],
)
def test_mask_hides_most_of_the_value(kind: IdentifierKind, value: str, masked: str) -> None:
    assert mask(kind, value) == masked


def test_every_found_identifier_masks_its_value() -> None:
    identifier = find_identifiers("BSN 111222333")[0]
    assert identifier.masked() == "1112*****"
    assert "111222333" not in identifier.masked()


def test_the_sidecode_table_has_fourteen_codes() -> None:
    assert len(SIDECODES) == 14
    assert len(set(SIDECODES)) == 14


@pytest.mark.parametrize(
    "plate",
    ["GB-12-34", "12-34-GB", "12-GB-34", "GB-12-TX", "GB-TX-12", "12-GB-TX", "12-GBT-3",
     "1-GBT-12", "GB-123-T", "G-123-TX", "GBT-12-X", "G-12-BTX", "1-GB-123", "123-GB-1"],
)  # fmt: skip
def test_each_sidecode_is_found(plate: str) -> None:
    assert found(f"De auto {plate} stond fout.") == [("license_plate", plate)]


def test_eight_and_nine_digit_numbers_are_found_in_one_scan_in_text_order() -> None:
    assert found("Mijn bsn is 11122304, of 111222333, of 1112.22.333.") == [
        ("bsn", "11122304"),
        ("bsn", "111222333"),
        ("bsn", "1112.22.333"),
    ]


EVERY_KIND = (
    "Mail a@voorbeeld.nl, IBAN NL91 ABNA 0417 1643 00, BSN 111222333, paspoort XR1001R58, "
    "kenteken GB-12-34, postcode 2511 CV, geboren 12-03-1985, tel 020-1234567."
)


@pytest.mark.parametrize("kind", IDENTIFIER_KINDS)
def test_asking_for_one_kind_finds_what_asking_for_all_finds(kind: IdentifierKind) -> None:
    """The kinds after the last one asked for are not searched: they could change nothing."""
    alone = found(EVERY_KIND, (kind,))
    assert alone
    assert alone == [(other, value) for other, value in found(EVERY_KIND) if other == kind]


PHONE_TEXTS = [
    "Bel 06-12345678 of 06 1234 5678 of 0612345678.",
    "Bel +31 (0)20 123 4567, 0031 6 1234 5678 of +31612345678.",
    "Bel (020) 123 45 67 of 020-1234567 of 010.123.4567 of 020/1234567.",
    "Bel 06\u00a012345678, 06\u200b12345678, ０６１２３４５６７８ of ٠٦١٢٣٤٥٦٧٨.",
    "Bel 085 123 4567, 088-1234567, 066 1234567 of 091 123 4567.",
    "Bel 06 x 12345678 of 06-1234-5678 x12 of 020 1234567 ext. 12.",
    "Bel het Juridisch Loket op 0900-8020, gratis 0800-0123 of de gemeente op 14 020.",
    "Bel 06-1234567 of 112, artikel 6:162, 2019/20, 35 300 VI, nr. 4.",
    "Call +44 20 7946 0958 or +32 2 123 45 67.",
    "Zie 12-03-1985, 1:2 en 3:4, ECLI:NL:HR:2019:1234 en Stb. 2021, 123.",
    "Tel 020 123 4567 111222333",
    "06  -  1234 5678, 06 -- 12 -- 34 -- 56 -- 78, 0 6 1 2 3 4 5 6 7 8",
]


def test_the_phone_matcher_is_skipped_only_where_it_finds_nothing() -> None:
    every = [
        (match.start, match.end)
        for text in PHONE_TEXTS
        for match in phonenumbers.PhoneNumberMatcher(text, "NL")
    ]
    assert every
    skipped = [text for text in PHONE_TEXTS if not _PHONE_DIGITS.search(text)]
    assert 0 < len(skipped) < len(PHONE_TEXTS)
    for text in PHONE_TEXTS:
        matched = [
            (match.start, match.end)
            for match in phonenumbers.PhoneNumberMatcher(text, "NL")
            if match.number.country_code == 31
            and phonenumbers.number_type(match.number) not in _service_types()
        ]
        assert list(_phones(text)) == matched, text


def test_every_separator_of_the_phone_matcher_keeps_the_digits_together() -> None:
    """Between two blocks of digits the matcher allows up to four of its separators."""
    separators = re.compile(f"[{_VALID_PUNCTUATION}]", re.IGNORECASE)
    chars = [chr(point) for point in range(0x10000) if separators.fullmatch(chr(point))]
    assert "-" in chars and " " in chars
    for char in chars:
        assert _PHONE_DIGITS.search((char * 4).join("061234567")), repr(char)
        if char not in "xX":  # the parser may read an x as a digit
            assert not _PHONE_DIGITS.search((char * 4).join("06123456")), repr(char)
            assert not _PHONE_DIGITS.search((char * 5).join("061234567")), repr(char)


def test_no_dutch_number_of_a_personal_type_is_shorter_than_the_phone_minimum() -> None:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region("NL")
    assert metadata is not None
    personal = [
        metadata.fixed_line,
        metadata.mobile,
        metadata.pager,
        metadata.voip,
        metadata.personal_number,
        metadata.voicemail,
    ]
    lengths = [
        length
        for desc in personal
        if desc is not None
        for length in (desc.possible_length or metadata.general_desc.possible_length)
    ]
    assert min(lengths) == _PHONE_MIN_DIGITS


def _alternatives(pattern: re.Pattern[str]) -> list[str]:
    """The words of a keyword pattern, each in its shortest spelling, without anchors."""
    words = re.sub(r"\\b|\?|\[(.)[^]]*\]", lambda m: m.group(1) or "", pattern.pattern)
    return [word.replace("\\.", ".").replace("-", "") for word in words.split("|")]


def _case_variants(word: str) -> list[str]:
    """`word`, and it with each letter in turn replaced by every other character that
    `re.IGNORECASE` lets match it (such as "İ" and "ı" for "i", "ſ" for "s")."""
    variants = [word, word.upper()]
    for index, letter in enumerate(word):
        same = re.compile(re.escape(letter), re.IGNORECASE)
        for point in range(0x2200):
            if same.fullmatch(chr(point)) and chr(point) != letter:
                variants.append(word[:index] + chr(point) + word[index + 1 :])
    return variants


@pytest.mark.parametrize(
    ("keywords", "letters"),
    [(_BIRTH_WORDS, _BIRTH_LETTERS), (_DOCUMENT_WORDS, _DOCUMENT_LETTERS)],
)
def test_a_text_without_the_keyword_letters_has_no_keyword(
    keywords: re.Pattern[str], letters: tuple[str, ...]
) -> None:
    """The cheap test before the scans of birth dates and document numbers: every
    spelling of every keyword, in any case `re` allows, holds one of the letters."""
    words = _alternatives(keywords)
    assert len(words) >= 6
    for word in words:
        for variant in _case_variants(word):
            assert keywords.search(f"x {variant} y"), variant
            assert holds_any(f"x {variant} y", letters), variant
    assert not holds_any("Ik ben gebleven op 12-03-1985.", _BIRTH_LETTERS)


@pytest.mark.parametrize(
    "text",
    [
        "Geboren op 12-03-1985.",
        "GEBOORTEDATUM: 12 maart 1985.",
        "Mijn paſpoortnummer is XR1001R58.",
        "Het documentnummer van mijn İD-kaart: IZ12AB345.",
    ],
)
def test_what_the_cheap_tests_let_through_is_still_found(text: str) -> None:
    assert found(text)


def test_a_text_without_a_digit_or_an_at_sign_holds_no_identifier() -> None:
    """Every kind but e-mail needs a digit, so such a text is not scanned; a digit of
    another script is a digit too."""
    assert found("Bel me op ٠٦-١٢٣٤٥٦٧٨.") == [("nl_phone", "٠٦-١٢٣٤٥٦٧٨")]
    assert found("Mail jan@voorbeeld.nl.") == [("email", "jan@voorbeeld.nl")]
    assert _DIGIT_OR_AT.search("٠") and not _DIGIT_OR_AT.search("Geen nummer hier, BSN.")
