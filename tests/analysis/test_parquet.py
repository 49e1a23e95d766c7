"""The Parquet files of `export_parquet`: types kept, DuckDB reads the same rows, the same
bytes again, no test case, and a folder that is someone's data is refused."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from soev_pipeline.analysis import TABLES, export_parquet
from soev_pipeline.analysis.frames import Selection, attempts_table, verdicts_table
from soev_pipeline.core.errors import ProjectError
from tests.analysis.conftest import Nights
from tests.analysis.test_frames import _with_labels
from tests.support.project import SECRET, TEST_IDS


@pytest.fixture
def exported(own_nights: Nights, tmp_path: Path) -> Path:
    _with_labels(own_nights)
    folder = tmp_path / "out"
    written = export_parquet(own_nights.project_file, folder)
    assert [file.path.name for file in written] == [f"{name}.parquet" for name in TABLES]
    assert all(file.rows > 0 for file in written)
    return folder


def test_pandas_reads_back_the_documented_types(exported: Path) -> None:
    for name, columns in TABLES.items():
        frame = pd.read_parquet(exported / f"{name}.parquet")
        assert {c: str(t) for c, t in frame.dtypes.items()} == {c.name: c.dtype for c in columns}
        schema = pq.read_schema(exported / f"{name}.parquet")
        assert schema.field(columns[0].name).metadata == {b"description": columns[0].about.encode()}


def test_duckdb_reads_the_same_rows_as_the_frames(own_nights: Nights, exported: Path) -> None:
    selection = Selection.of(own_nights.project_file)
    frames = {"verdicts": verdicts_table(selection), "attempts": attempts_table(selection)[0]}
    for name, frame in frames.items():
        read = duckdb.sql(f"select * from '{exported / name}.parquet'").df()
        assert len(read) == len(frame)
        for column in ("run_id", "case_id", "attempt", "scoring"):
            assert list(read[column]) == list(frame[column])
        assert list(read.iloc[:, -1].astype(str)) == list(frame.iloc[:, -1].astype(str))
    statuses = duckdb.sql(
        f"select status, count(*) from '{exported}/verdicts.parquet' group by status"
    ).fetchall()
    assert dict(statuses) == frames["verdicts"].status.value_counts().loc[lambda n: n > 0].to_dict()


def test_exporting_again_gives_the_same_bytes(own_nights: Nights, exported: Path) -> None:
    before = {path.name: path.read_bytes() for path in exported.iterdir()}
    export_parquet(own_nights.project_file, exported)
    assert {path.name: path.read_bytes() for path in exported.iterdir()} == before


def test_no_file_holds_a_test_case(exported: Path) -> None:
    for path in exported.iterdir():
        table = pq.read_table(path)
        text = str(table.to_pylist()) + str(table.schema.metadata)
        assert SECRET not in text and not any(test_id in text for test_id in TEST_IDS), path


def test_a_folder_that_is_someones_data_is_refused(own_nights: Nights, tmp_path: Path) -> None:
    project = own_nights.project_file

    def refused(folder: Path, message: str) -> None:
        with pytest.raises(ProjectError, match=message):
            export_parquet(project, folder)

    refused(own_nights.runs / "export", "inside the runs archive")
    refused(own_nights.directory / ".soev", "inside the project's state")
    refused(own_nights.directory, "the project's own folder")
    refused(tmp_path / "missing" / "out", "does not exist")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    refused(tmp_path / "link", "a symbolic link")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    os.symlink(victim, out / "verdicts.parquet")
    refused(out, "not a regular file")
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert sorted(path.name for path in out.iterdir()) == ["verdicts.parquet"]
    assert not (tmp_path / "elsewhere").exists() or not any((tmp_path / "elsewhere").iterdir())
