"""The licence-plate finder: one scan for all sidecodes, the same plates as one per sidecode."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest

from soev_pipeline.text import SIDECODES
from soev_pipeline.text.plates import find_license_plates
from soev_pipeline.text.proximity import near

LETTERS = "BDFGHJKLMNPRSTVXZ"
NEVER_ISSUED = ("SS", "SD", "SA", "GVD", "KKK", "NSB", "PKK", "PSV", "TBS", "PVV", "SGP", "VVD")


def _pattern(sidecode: str, separator: str) -> re.Pattern[str]:
    groups = [
        f"([{LETTERS}]{{{len(group)}}})" if group[0] == "X" else rf"(\d{{{len(group)}}})"
        for group in sidecode.split("-")
    ]
    return re.compile(rf"(?<![\w-]){separator.join(groups)}(?![\w-])")


PER_SIDECODE = [
    (_pattern(sidecode, separator), separator) for separator in ("-", "") for sidecode in SIDECODES
]
KEYWORDS = re.compile(r"\bkenteken|\bnummerplaat|\blicen[cs]e plate", re.IGNORECASE)


def one_scan_per_sidecode(text: str) -> Iterator[tuple[int, int]]:
    """The finder as it was first written, with a scan per sidecode: the reference."""
    for pattern, separator in PER_SIDECODE:
        for match in pattern.finditer(text):
            if separator == "" and not near(text, match.start(), KEYWORDS):
                continue
            if not set(match.groups()) & set(NEVER_ISSUED):
                yield match.span()


def plate(rng: random.Random, sidecode: str) -> str:
    return "".join(
        rng.choice(LETTERS) if char == "X" else str(rng.randrange(10)) if char == "9" else char
        for char in sidecode
    )


def plates(text: str) -> list[str]:
    return [text[start:end] for start, end in find_license_plates(text)]


@pytest.mark.parametrize("sidecode", SIDECODES)
def test_each_sidecode_is_found_with_hyphens(sidecode: str) -> None:
    value = plate(random.Random(sidecode), sidecode)
    assert plates(f"De auto {value} stond fout.") == [value]


@pytest.mark.parametrize("sidecode", SIDECODES)
def test_each_sidecode_is_found_without_hyphens_after_a_keyword(sidecode: str) -> None:
    value = plate(random.Random(sidecode), sidecode).replace("-", "")
    assert plates(f"Het kenteken is {value}.") == [value]
    assert plates(f"De code {value} staat in de brief.") == []


@pytest.mark.parametrize("sidecode", SIDECODES)
def test_a_never_issued_combination_is_no_plate(sidecode: str) -> None:
    groups = sidecode.split("-")
    letters = next(n for n, group in enumerate(groups) if group[0] == "X" and len(group) > 1)
    groups[letters] = next(word for word in NEVER_ISSUED if len(word) == len(groups[letters]))
    value = plate(random.Random(sidecode), "-".join(groups))
    assert plates(f"De auto {value} stond fout.") == []
    assert plates(f"kenteken {value.replace('-', '')}") == []


@pytest.mark.parametrize(
    "text",
    [
        "gb-12-34",  # lower case
        "GA-12-34",  # A is no plate letter
        "GB-12-345",  # no sidecode
        "GB-1234",
        "GB12-34",
        "xGB-12-34",  # part of a longer token
        "GB-12-34-",
        "-GB-12-34",
        "GB-12-34x",
        "kenteken GB1234X",
    ],
)
def test_a_token_that_only_looks_like_a_plate_is_none(text: str) -> None:
    assert plates(f"Zie {text} hier.") == []


def test_plates_are_yielded_in_text_order() -> None:
    text = "Eerst 12-GBT-3, dan GB-12-34 en kenteken 1GBT12, dan G-12-BTX."
    assert plates(text) == ["12-GBT-3", "GB-12-34", "1GBT12", "G-12-BTX"]


TABLE = [
    "De auto GB-12-34 stond fout.",
    "Kenteken: GBX12T, en ook 12-BGT-3.",
    "Mijn kenteken is (99-XX-99) of 1-GBT-12; KKK-12-B en SS-12-34 niet.",
    "GB-12-34GB-12-34 GB-12-34/12-34-GB",
    "Zie art. 6:162 BW, BWBR0005537/artikel-6:7 en ECLI:NL:HR:2019:1234.",
    "licence plate 99ZZ99. Kenteken? Nee. 99ZZ99",
    "nummerplaat\n99ZZ99 en kenteken 12345678 en kenteken ١٢-GB-٣٤",
]


def random_text(rng: random.Random) -> str:
    """Plates of every sidecode, near misses and noise, next to each other."""
    tokens = []
    for _ in range(rng.randint(1, 25)):
        roll = rng.random()
        if roll < 0.4:
            value = plate(rng, rng.choice(SIDECODES))
            if rng.random() < 0.3:
                value = value.replace("-", "")
            if rng.random() < 0.1:
                value = value.replace(value[-2:], rng.choice(NEVER_ISSUED))
            tokens.append(value)
        elif roll < 0.6:
            tokens.append(rng.choice(["kenteken", "nummerplaat", "license plate", "de", "BW"]))
        else:
            alphabet = LETTERS + "ACQ0123456789-"
            tokens.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))))
    separators = [" ", " ", " ", "", "-", ", ", ". ", "\n", "/"]
    return "".join(token + rng.choice(separators) for token in tokens)


def test_the_one_scan_finds_what_a_scan_per_sidecode_finds() -> None:
    rng = random.Random(1)
    texts = TABLE + [random_text(rng) for _ in range(1000)]
    found = 0
    for text in texts:
        spans = list(find_license_plates(text))
        assert spans == sorted(one_scan_per_sidecode(text)), text
        found += len(spans)
    assert found > 700
