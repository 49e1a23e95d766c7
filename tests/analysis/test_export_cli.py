"""`soev-evals export`, as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.conftest import Nights
from tests.support.cli import invoke, run_module

pytestmark = pytest.mark.e2e


def test_export_writes_the_tables_of_the_runs_it_is_given(nights: Nights, tmp_path: Path) -> None:
    out = tmp_path / "out"
    project = ("--project", nights.project_file)
    result = run_module("export", "n2", "n3", "--parquet", out, *project)
    assert result.status == 0, result.err
    assert [line.split()[0] for line in result.out.splitlines()] == [
        str(out / f"{name}.parquet") for name in ("runs", "cases", "attempts", "verdicts", "labels")
    ]
    assert result.out.splitlines()[0].endswith("  2 rows")
    result.assert_no_test_content()

    every = invoke("export", "--all", "--all-scorings", "--parquet", out, *project)
    assert every.status == 0 and every.out.splitlines()[0].endswith("  4 rows")  # n3 twice

    neither = invoke("export", "--parquet", out, *project)
    assert neither.status == 2 and "give the runs to export, or --all" in neither.error_line()
    inside = invoke("export", "--all", "--parquet", nights.runs / "x", *project)
    assert inside.status == 2 and "inside the runs archive" in inside.error_line()
    assert not (nights.runs / "x").exists()
    unknown = invoke("export", "n9", "--parquet", out, *project)
    assert unknown.status == 1 and "no run 'n9'" in unknown.error_line()
