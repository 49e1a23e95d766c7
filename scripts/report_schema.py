"""Print, write or check `docs/report.schema.json`, the JSON Schema of `report RUN --json`.

python scripts/report_schema.py            print the schema generated from `Report`
python scripts/report_schema.py --write    write it to docs/report.schema.json
python scripts/report_schema.py --check    exit 1 when docs/report.schema.json is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from soev_pipeline.run import Report

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"


def render() -> str:
    """The schema of `Report` as the file holds it: sorted keys, indent 2, a final newline."""
    return json.dumps(Report.model_json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None, path: Path = SCHEMA) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write {path.name}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {path.name} is stale")
    args = parser.parse_args(argv)
    schema = render()
    if args.write:
        path.write_text(schema, encoding="utf-8")
    elif args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != schema:
            print(f"{path} is stale: run python scripts/report_schema.py --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(schema)
    return 0


if __name__ == "__main__":
    sys.exit(main())
