"""The runs of a project as data frames, and as Parquet files (docs/analysis.md).

    from soev_pipeline.analysis import verdicts_frame

    verdicts = verdicts_frame("project.yaml")
    verdicts[verdicts.status == "fail"].groupby("criterion").size()

Every table holds the dev cases alone: the test split is sealed here as everywhere.
Importing the package imports the columns alone; the frames (pandas, pyarrow) load on first
use, so the Dagster layer can describe the tables without loading them.
"""

from typing import TYPE_CHECKING, Any

from .columns import TABLES, Column

if TYPE_CHECKING:
    from .frames import (
        attempts_frame,
        cases_frame,
        export_parquet,
        labels_frame,
        runs_frame,
        verdicts_frame,
    )
    from .parquet import Written, arrow_schema

__all__ = [
    "TABLES",
    "Column",
    "Written",
    "arrow_schema",
    "attempts_frame",
    "cases_frame",
    "export_parquet",
    "labels_frame",
    "runs_frame",
    "verdicts_frame",
]

_FRAMES = {
    "attempts_frame",
    "cases_frame",
    "export_parquet",
    "labels_frame",
    "runs_frame",
    "verdicts_frame",
}


def __getattr__(name: str) -> Any:
    """The frames and the Parquet writer, imported on first use."""
    if name in _FRAMES:
        from . import frames

        return getattr(frames, name)
    if name in {"Written", "arrow_schema"}:
        from . import parquet

        return getattr(parquet, name)
    raise AttributeError(f"module 'soev_pipeline.analysis' has no attribute {name!r}")
