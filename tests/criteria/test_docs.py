"""The written copies of the registry: the kinds table of docs/criteria.md, which
scripts/criteria_table.py generates, and every count of the kinds that prose states."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from soev_pipeline.criteria import Builtin, CriterionRegistry, NoParams, builtin_registry, outcome

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "criteria_table", REPO / "scripts" / "criteria_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kinds_table_in_docs_criteria_is_current() -> None:
    script = _script()
    page = (REPO / "docs" / "criteria.md").read_text(encoding="utf-8")
    assert script.replaced(page, script.render()) == page, "run: make docs"


def test_the_table_has_a_row_per_kind_with_its_traits() -> None:
    table = _script().render()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    registry = builtin_registry()
    assert [row.split("`")[1] for row in rows] == list(registry)
    row = next(row for row in rows if row.startswith("| `privacy.none` |"))
    assert "`target` (`reply`; or `prompt`)" in row
    assert "`kinds` (`[bsn, iban, email, nl_phone]`)" in row
    language = next(row for row in rows if row.startswith("| `reply.language` |"))
    assert "| a language detector |" in language
    assert "`language` (required)" in language
    assert f"The registry holds {len(registry)} built-in kinds;" in table


def test_the_table_lists_the_judge_labels_and_the_files_of_the_kinds() -> None:
    table = _script().render()
    (labels,) = [line for line in table.splitlines() if line.startswith("- Ask the judge")]
    assert "`behaviour.expected` (`answer`, `refuse`, `abstain`)" in labels
    assert "`rubric.judge` (from its parameters)" in labels
    assert "nuggets.coverage" not in labels  # a judge question per nugget, no label an attempt
    assert "- Read project files when the project loads (1): `rubric.judge`." in table


def test_a_pipe_in_a_cell_does_not_end_it() -> None:
    kind = Builtin(
        "custom.pipe",
        NoParams,
        _passes,
        needs=frozenset(),
        summary="a | b",
        example={"kind": "custom.pipe", "weight": 2},
    )
    row = _script().render(CriterionRegistry([kind])).splitlines()
    assert "| `custom.pipe` | — | a \\| b | none | `{kind: custom.pipe, weight: 2}` |" in row


async def _passes(case: object, evidence: object, *, params: NoParams, ctx: object) -> object:
    return outcome(passed=True)


def test_check_fails_on_a_stale_page_and_write_mends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    page = tmp_path / "criteria.md"
    page.write_text(f"# Kinds\n\n{script.BEGIN}\nold\n{script.END}\n\nMore prose.\n")
    assert script.main(["--check"], path=page) == 1
    assert "stale" in capsys.readouterr().err
    assert script.main(["--write"], path=page) == 0
    assert script.main(["--check"], path=page) == 0
    text = page.read_text()
    assert text.startswith("# Kinds\n\n") and text.endswith(f"{script.END}\n\nMore prose.\n")


def test_a_page_without_its_markers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "criteria.md"
    page.write_text("# Kinds\n")
    assert _script().main(["--write"], path=page) == 1
    assert "must hold" in capsys.readouterr().err
    assert page.read_text() == "# Kinds\n"


# Counts written in prose.

_WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
_WORDS += " fifteen sixteen seventeen eighteen nineteen twenty"
NUMBERS = {word: value for value, word in enumerate(_WORDS.split(), start=1)}
COUNT = re.compile(
    r"(?P<lead>\b\w+\s+)?\b(?P<n>\d+|(?:twenty-)?(?:" + "|".join(NUMBERS) + r"))\s+"
    r"(?P<before>(?:(?:built-in|criterion|judge|rule)\s+)*)kinds\b"
    r"(?P<after>(?:[^.]|\.(?!\s))*)",
    re.IGNORECASE,
)
"""A number, then "kinds", then the rest of the sentence (a period inside a name does not
end it)."""
ASKS_A_JUDGE = re.compile(r"(\(.*?\) )?(that )?(asks?|needs?) (an? )?(llm )?judge")


def _value(number: str) -> int:
    word = number.lower()
    if word.isdigit():
        return int(word)
    if word.startswith("twenty-"):
        return 20 + NUMBERS[word.removeprefix("twenty-")]
    return NUMBERS[word]


def _what(match: re.Match[str]) -> str | None:
    """Which figure a counted phrase states: all kinds, the judge kinds, the others; or
    None for a count of something else ("the eight kinds are bsn, ...")."""
    before, after = match["before"].lower(), " ".join(match["after"].lower().split())
    if "judge" in before or ASKS_A_JUDGE.match(after):
        return "judge"
    if "need no judge" in after or "without a judge" in after:
        return "no judge"
    lead = (match["lead"] or "").strip().lower()
    if "built-in" in before or after.startswith("of criteria") or lead == "all":
        return "all"
    return None


def _written() -> Iterator[tuple[str, int, str, str]]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += sorted((REPO / "examples").rglob("*.md"))
    files += sorted((REPO / "soev_pipeline").rglob("*.py"))
    for file in files:
        text = file.read_text(encoding="utf-8")
        for match in COUNT.finditer(text):
            what = _what(match)
            if what is not None:
                line = text.count("\n", 0, match.start("n")) + 1
                place = f"{file.relative_to(REPO)}:{line}"
                yield place, _value(match["n"]), what, " ".join(match[0].split())[:80]


def test_every_count_of_the_kinds_in_prose_is_the_registrys() -> None:
    registry = builtin_registry()
    judge = sum("judge" in registry.needs(name) for name in registry)
    figures = {"all": len(registry), "judge": judge, "no judge": len(registry) - judge}
    written = list(_written())
    wrong = [
        f"{place}: {phrase!r} says {value}, the registry {figures[what]}"
        for place, value, what, phrase in written
        if value != figures[what]
    ]
    assert not wrong, "\n".join(wrong)
    assert any(what == "judge" for _, _, what, _ in written)  # the scan finds what it checks


@pytest.mark.parametrize(
    ("phrase", "what"),
    [
        ("grades it with 22 kinds of criteria (rules, ...).", "all"),
        ("The 22 built-in criterion kinds, one family per module.", "all"),
        ("## All 22 kinds\n", "all"),
        ("Five kinds (`behaviour.expected`, `privacy.names`) ask an LLM judge.", "judge"),
        ("The five judge kinds (`privacy.names`) need a judge.", "judge"),
        ("each graded with all 17 kinds that need no judge, against corpora.", "no judge"),
        ("Seven built-in kinds grade the reply by rule, without a judge: ...", "no judge"),
        ("The eight kinds are `bsn`, `iban`.", None),
        ("Two criterion kinds have the same name.", None),
    ],
)
def test_a_counted_phrase_is_read_as_the_figure_it_states(phrase: str, what: str | None) -> None:
    match = COUNT.search(phrase)
    assert match is not None
    assert _what(match) == what
