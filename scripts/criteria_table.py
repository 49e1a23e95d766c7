"""Print, write or check the table of the built-in criterion kinds in `docs/criteria.md`.

The table is generated from `builtin_registry()`: each kind's name, what it needs from the
context, its one-line summary, its parameters with their defaults, and its example; above it,
the kinds by what they need, their judge labels and the files they read. It sits between two
marker comments in docs/criteria.md; the prose around it is written by hand.

python scripts/criteria_table.py            print the generated part
python scripts/criteria_table.py --write    write it into docs/criteria.md
python scripts/criteria_table.py --check    exit 1 when docs/criteria.md is stale
"""

from __future__ import annotations

import argparse
import math
import sys
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from soev_pipeline.criteria import NEEDS, Builtin, CriterionRegistry, Need, builtin_registry

PAGE = Path(__file__).resolve().parents[1] / "docs" / "criteria.md"
BEGIN = "<!-- BEGIN generated kinds table: scripts/criteria_table.py, run `make docs` -->"
END = "<!-- END generated kinds table -->"
NEED_NAMES: Mapping[Need, str] = {
    "judge": "a judge",
    "language_detector": "a language detector",
    "corpus": "the corpus lookup",
}


def _cell(text: str) -> str:
    """`text` as one table cell: a pipe would end the cell, a newline the row."""
    return " ".join(text.split()).replace("|", "\\|")


def _flow(value: Any) -> str:
    """`value` as YAML flow text, the way a suite file writes it inline."""
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    if isinstance(plain, tuple | frozenset):
        plain = list(plain)
    text: str = yaml.safe_dump(
        plain, default_flow_style=True, allow_unicode=True, sort_keys=False, width=math.inf
    )
    return text.removesuffix("\n...\n").strip()


def _choices(info: FieldInfo) -> list[Any]:
    """The values a `Literal` field allows, else nothing."""
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return []


def _parameter(name: str, info: FieldInfo) -> str:
    """One parameter: its name, its default or `required`, and the other values it allows."""
    shown = f"`{info.alias or name}`"
    if info.is_required():
        return f"{shown} (required)"
    default = info.get_default(call_default_factory=True)
    if default is None:
        return f"{shown} (unset)"
    others = [choice for choice in _choices(info) if choice != default]
    also = "; or " + ", ".join(f"`{_flow(choice)}`" for choice in others) if others else ""
    return f"{shown} (`{_flow(default)}`{also})"


def _parameters(kind: Builtin[Any]) -> str:
    fields = kind.params_model.model_fields
    return ", ".join(_parameter(name, info) for name, info in fields.items()) or "none"


def _needs(needs: frozenset[Need]) -> str:
    return ", ".join(NEED_NAMES[need] for need in sorted(needs)) or "—"


def _labels(kind: Builtin[Any]) -> str:
    if callable(kind.labels):
        return f"`{kind.name}` (from its parameters)"
    return f"`{kind.name}` ({', '.join(f'`{label}`' for label in kind.labels)})"


def render(registry: CriterionRegistry | None = None) -> str:
    """The generated part of docs/criteria.md, markers included, for `registry`'s kinds."""
    registry = builtin_registry() if registry is None else registry
    kinds = [registry.get(name) for name in registry]
    pure = [kind.name for kind in kinds if not kind.needs]
    lines = [
        BEGIN,
        "",
        f"The registry holds {len(kinds)} built-in kinds; {len(pure)} need nothing from the "
        "context beyond the case, the evidence and the project's messages.",
        "",
    ]
    for need in sorted(NEEDS):
        names = [f"`{kind.name}`" for kind in kinds if need in kind.needs]
        if names:
            lines.append(f"- Need {NEED_NAMES[need]} ({len(names)}): {', '.join(names)}.")
    labelled = [_labels(kind) for kind in kinds if kind.labelled]
    if labelled:
        lines.append(
            "- Ask the judge for one label an attempt, which people give too when they "
            f"calibrate it ({len(labelled)}): {', '.join(labelled)}."
        )
    reading = [f"`{kind.name}`" for kind in kinds if kind.files is not None]
    if reading:
        lines.append(
            f"- Read project files when the project loads ({len(reading)}): {', '.join(reading)}."
        )
    lines += [
        "",
        "| kind | needs | passes when | parameters (default) | example |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind in kinds:
        example = _flow(dict(kind.example)) if kind.example else f"{{kind: {kind.name}}}"
        cells = [
            f"`{kind.name}`",
            _needs(kind.needs),
            kind.summary,
            _parameters(kind),
            f"`{example}`",
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def replaced(page: str, table: str) -> str:
    """`page` with the text between its markers (markers included) replaced by `table`.

    Raises:
        ValueError: the page does not hold both markers, in order, once each.
    """
    start, stop = page.find(BEGIN), page.find(END)
    if start < 0 or stop < start or page.count(BEGIN) != 1 or page.count(END) != 1:
        raise ValueError(f"the page must hold {BEGIN!r} and then {END!r}, once each")
    end = stop + len(END)
    if page[end : end + 1] == "\n":
        end += 1
    return page[:start] + table + page[end:]


def main(argv: Sequence[str] | None = None, path: Path = PAGE) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write it into {path.name}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {path.name} is stale")
    args = parser.parse_args(argv)
    table = render()
    if not (args.write or args.check):
        sys.stdout.write(table)
        return 0
    try:
        page = path.read_text(encoding="utf-8")
        current = replaced(page, table)
    except (OSError, ValueError) as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 1
    if args.write:
        if current != page:
            path.write_text(current, encoding="utf-8")
    elif current != page:
        print(f"{path} is stale: run make docs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
