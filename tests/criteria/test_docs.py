"""The written copy of the registry: the kinds table of docs/criteria.md, which
scripts/criteria_table.py generates. No prose states how many kinds there are: a count
would go stale with the next kind, so only the generated part gives one."""

from __future__ import annotations

import importlib.util
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
