"""Print, write or check the JSON Schemas of the report: `docs/report.schema.json`, of what
`report RUN --json` prints, and `docs/report-file.schema.json`, of the `report.json` a
scoring keeps on disk (the same without its case list, which `verdicts.jsonl` holds).

python scripts/report_schema.py            print the schema generated from `Report`
python scripts/report_schema.py --write    write both files
python scripts/report_schema.py --check    exit 1 when either file is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from soev_pipeline.run import Report

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"
FILE_SCHEMA = SCHEMA.with_name("report-file.schema.json")


def render() -> str:
    """The schema of `Report` as the file holds it: sorted keys, indent 2, a final newline."""
    return json.dumps(Report.model_json_schema(), indent=2, sort_keys=True) + "\n"


def render_file() -> str:
    """The schema of a scoring's `report.json`: the report without `cases` (a report.json
    written before the case list moved out may still hold it)."""
    schema = Report.model_json_schema()
    schema["title"] = "ReportFile"
    schema["description"] = (
        "The report.json of a scoring: the report of `report RUN --json` without its case "
        "list, which verdicts.jsonl beside it holds."
    )
    schema["required"] = [name for name in schema["required"] if name != "cases"]
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(
    argv: Sequence[str] | None = None, path: Path = SCHEMA, file_path: Path = FILE_SCHEMA
) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="write both schema files")
    action.add_argument("--check", action="store_true", help="exit 1 when one is stale")
    args = parser.parse_args(argv)
    schemas = {path: render(), file_path: render_file()}
    if args.write:
        for target, schema in schemas.items():
            target.write_text(schema, encoding="utf-8")
    elif args.check:
        for target, schema in schemas.items():
            current = target.read_text(encoding="utf-8") if target.exists() else ""
            if current != schema:
                print(
                    f"{target} is stale: run python scripts/report_schema.py --write",
                    file=sys.stderr,
                )
                return 1
    else:
        sys.stdout.write(schemas[path])
    return 0


if __name__ == "__main__":
    sys.exit(main())
