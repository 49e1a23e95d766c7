"""Tests of source ids: segments, hierarchical and exact matching, the article of an id."""

from __future__ import annotations

import pytest

from soev_pipeline.corpus.sources import article_of, canonical, matches, matching, segments, unique

AWB_67 = "BWBR0005537/artikel-6:7"


def test_segments_drop_empty_parts_and_whitespace() -> None:
    assert segments(" BWBR0005537//artikel-6:7/ ") == ("BWBR0005537", "artikel-6:7")
    assert segments("") == ()
    assert canonical("BWBR0005537/artikel-6:7/") == AWB_67


@pytest.mark.parametrize(
    ("cited", "source", "expected"),
    [
        (AWB_67, AWB_67, True),
        (f"{AWB_67}/lid-1", AWB_67, True),
        ("BWBR0005537", AWB_67, False),
        ("BWBR0005537/artikel-6:70", AWB_67, False),
        (AWB_67, "BWBR0005537/artikel-6:70", False),
        (f"{AWB_67}/lid-10", f"{AWB_67}/lid-1", False),
        (AWB_67, "BWBR0005537", True),
        ("BWBR00055370/artikel-6:7", "BWBR0005537", False),
        ("", AWB_67, False),
        (AWB_67, "", False),
    ],
)
def test_hierarchical_match(cited: str, source: str, expected: bool) -> None:
    assert matches(cited, source) is expected
    assert matches(cited, source, match="hierarchical") is expected


@pytest.mark.parametrize(
    ("cited", "source", "expected"),
    [
        (AWB_67, AWB_67, True),
        (f"{AWB_67}/", AWB_67, True),
        (f"{AWB_67}/lid-1", AWB_67, False),
        (AWB_67, "BWBR0005537", False),
        ("BWBR0005537/artikel-6:70", AWB_67, False),
    ],
)
def test_exact_match(cited: str, source: str, expected: bool) -> None:
    assert matches(cited, source, match="exact") is expected


def test_matching_lists_the_sources_met_in_order() -> None:
    sources = ["BWBR0005537", "BWBR0005537/artikel-6:8", AWB_67]
    assert matching(f"{AWB_67}/lid-2", sources) == ["BWBR0005537", AWB_67]
    assert matching(f"{AWB_67}/lid-2", sources, match="exact") == []


@pytest.mark.parametrize(
    ("source_id", "article"),
    [
        (f"{AWB_67}/lid-1", AWB_67),
        (f"{AWB_67}/lid-1/onderdeel-a", AWB_67),
        (AWB_67, AWB_67),
        ("BWBR0005537/hoofdstuk-6/artikel-6:7/lid-1", "BWBR0005537/hoofdstuk-6/artikel-6:7"),
        ("BWBR0005537/hoofdstuk-6", "BWBR0005537/hoofdstuk-6"),
        ("BWBR0005537", "BWBR0005537"),
        ("BWBR0005537/Artikel-6:7/lid-1", "BWBR0005537/Artikel-6:7"),
    ],
)
def test_article_of(source_id: str, article: str) -> None:
    assert article_of(source_id) == article


def test_unique_keeps_first_seen_order_of_canonical_ids() -> None:
    assert unique([AWB_67, "BWBR1", f"{AWB_67}/", "", "/"]) == [AWB_67, "BWBR1"]
