"""docs/analysis.md: its tables are the columns of the tables, and its examples run."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from soev_pipeline.analysis import TABLES
from tests.analysis.conftest import Nights
from tests.analysis.test_frames import _with_labels

PAGE = Path(__file__).resolve().parents[2] / "docs" / "analysis.md"


def test_the_pages_tables_are_the_columns_of_the_tables() -> None:
    text = PAGE.read_text(encoding="utf-8")
    found: dict[str, list[tuple[str, str, str]]] = {}
    for name, body in re.findall(r"^### (\w+)\n\n(.*?)\n\n", text, re.M | re.S):
        found[name] = re.findall(r"^\| `(\w+)` \| (\w+) \| (.*) \|$", body, re.M)
    assert found == {
        name: [(c.name, c.type, c.about) for c in columns] for name, columns in TABLES.items()
    }


def test_the_five_questions_are_answered_on_a_project_of_several_nights(
    own_nights: Nights, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_labels(own_nights)
    monkeypatch.chdir(own_nights.directory)
    blocks = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 12  # the first example, the set-up, and two answers to each question
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, str(PAGE), "exec"), namespace)
    output = printed.getvalue()
    assert (own_nights.directory / "analysis" / "verdicts.parquet").is_file()
    assert "kern-001" in output  # it flipped: passed, failed, passed
    assert "rubric.judge" in output and "answer" in output
    assert "GEHEIM" not in output
