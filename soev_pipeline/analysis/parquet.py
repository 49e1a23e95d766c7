"""The analysis tables as Parquet files: `soev-evals export RUN... --parquet DIR`.

Each table of `columns.TABLES` is one file, `DIR/<table>.parquet`, with the Arrow types of
its columns and each column's description in the field's metadata, so pandas, polars and
DuckDB read back the types the frames have. A file is written beside its place and renamed
over it, so a reader never sees half a file and an export that fails leaves the previous
one whole; the same archive exported again gives the same bytes.

The folder is checked before anything is written: it is not a symbolic link, lies outside
the runs and the project's state, is not the project's own folder, and every file it holds
under a table's name is a regular file (a link, a folder or a device there is refused, never
written through).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from soev_pipeline.core.errors import OutputPathError
from soev_pipeline.core.outputs import replace_file
from soev_pipeline.project import ProjectPaths
from soev_pipeline.run.archive import naming

from .columns import TABLES, Column, ColumnType

SUFFIX = ".parquet"
_ARROW: dict[ColumnType, pa.DataType] = {
    "string": pa.string(),
    "category": pa.dictionary(pa.int32(), pa.string()),
    "int": pa.int64(),
    "Int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "datetime": pa.timestamp("us", tz="UTC"),
}


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    """The Arrow schema of a table: each column's type, and its description as metadata."""
    return pa.schema(
        [
            pa.field(
                column.name,
                _ARROW[column.type],
                nullable=True,
                metadata={"description": column.about},
            )
            for column in columns
        ]
    )


@dataclass(frozen=True)
class Written:
    """A file an export wrote, and its rows."""

    path: Path
    rows: int


def check_folder(folder: Path, paths: ProjectPaths) -> Path:
    """The folder to export into, resolved, once it is found safe to write in.

    Raises:
        OutputPathError (a usage error, exit 2, as for every output flag): the folder is
            a symbolic link or not a folder; it lies inside the runs or the state of the
            project, or is the project's folder; its parent does not exist; or a table's
            file in it is not a regular file.
    """
    if folder.is_symlink():
        raise OutputPathError(f"--parquet {folder}: a symbolic link; give the folder it points to")
    resolved = folder.resolve()
    if resolved.exists() and not resolved.is_dir():
        raise OutputPathError(f"--parquet {folder}: not a folder")
    if not resolved.parent.is_dir():
        raise OutputPathError(f"--parquet {folder}: its folder {resolved.parent} does not exist")
    guarded_folders = [(paths.state.resolve(), "the project's state")]
    if isinstance(paths.runs, Path):  # runs in object storage: no local folder to guard
        guarded_folders.append((paths.runs.resolve(), "the runs archive"))
    for guarded, what in guarded_folders:
        if resolved == guarded or resolved.is_relative_to(guarded):
            raise OutputPathError(
                f"--parquet {folder}: inside {what} ({guarded}); export somewhere else"
            )
    if resolved == paths.directory.resolve():
        raise OutputPathError(
            f"--parquet {folder}: the project's own folder; export into a folder of its own"
        )
    for table in TABLES:
        target = resolved / f"{table}{SUFFIX}"
        try:
            info = target.lstat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise OutputPathError(
                f"--parquet {target}: not a regular file; it is never written through"
            )
    return resolved


def write_tables(folder: Path, tables: Mapping[str, pd.DataFrame]) -> list[Written]:
    """Write each table to `folder/<table>.parquet` through a temporary file and a rename.

    `folder` must have passed `check_folder`; it is made when it does not exist.
    """
    with naming(folder):
        folder.mkdir(exist_ok=True)
    written = []
    for name, frame in tables.items():
        target = folder / f"{name}{SUFFIX}"
        table = pa.Table.from_pandas(frame, schema=arrow_schema(TABLES[name]), preserve_index=False)
        with naming(target):  # a new temporary file (never a link), renamed over the target
            replace_file(target, partial(_write_parquet, table), option="--parquet")
        written.append(Written(target, len(frame)))
    return written


def _write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, compression="zstd")
