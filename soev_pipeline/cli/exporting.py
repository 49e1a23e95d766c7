"""`soev-evals export RUN... --parquet DIR` (docs/analysis.md#parquet-files).

The parser part is imported with the command line, so it imports nothing heavy; pandas and
pyarrow are imported when the command runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import EXIT_OK, EXIT_USAGE


def add_export_parser(
    commands: argparse._SubParsersAction[Any],
    add_project: Callable[[argparse.ArgumentParser], None],
    add_runs_dir: Callable[[argparse.ArgumentParser], None],
    run_id: Callable[[str], str],
) -> None:
    """The `export` subcommand; `--project`, `--runs-dir` and the run id type come from
    `main`, as every command's do."""
    export = commands.add_parser(
        "export",
        help="write runs as Parquet files: runs, cases, attempts, verdicts, labels",
        description="Write the tables of docs/analysis.md of the given runs (their latest "
        "scorings) as Parquet files into a folder; the test split is left out.",
    )
    export.add_argument("runs", nargs="*", type=run_id, metavar="RUN", help="a run to export")
    export.add_argument(
        "--all", action="store_true", help="export every run of the project instead"
    )
    export.add_argument(
        "--parquet", type=Path, required=True, metavar="DIR", help="the folder to write into"
    )
    export.add_argument(
        "--all-scorings",
        action="store_true",
        help="every scoring of each run, not only its latest",
    )
    add_project(export)
    add_runs_dir(export)


def cmd_export(args: argparse.Namespace) -> int:
    """Write the Parquet files and print one line per file."""
    if bool(args.runs) == args.all:
        print(
            "soev-evals export: error: give the runs to export, or --all (not both) "
            "(see soev-evals export --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from soev_pipeline.analysis import export_parquet

    from .commands import _paths

    paths = _paths(args)
    written = export_parquet(
        paths.project_file,
        args.parquet,
        runs=None if args.all else args.runs,
        all_scorings=args.all_scorings,
        runs_dir=paths.runs,
    )
    for file in written:
        print(f"{file.path}  {file.rows} rows")
    return EXIT_OK
