"""The package's layers point one way: no module imports from a layer above or beside its own.

Every import form counts: top level, inside a function, and under `TYPE_CHECKING`.
docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "soev_pipeline"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("(root)",),
    ("core",),
    ("text",),
    ("corpus",),
    ("criteria", "arms", "judges", "reference"),
    ("project",),
    ("runtime",),
    ("run",),
    ("calibration",),
    ("probes", "analysis"),
    ("view",),
    ("api",),
    ("orchestration",),
    ("cli",),
    ("(facade)",),
    ("__main__",),
)
"""`(root)` is the package module as lower modules import it (for `__version__`);
`(facade)` is what its `__getattr__` imports on first use, to offer the Python API
(`soev_pipeline.evaluate`): the one file plays both parts."""
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
Edges = dict[tuple[str, str], list[str]]


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def _imports(path: Path, root: Path) -> list[tuple[str, int]]:
    """Every `soev_pipeline` module that `path` imports, with its line; relative ones resolved."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    package = parts[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            found.append((name, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] == "soev_pipeline"]


@functools.cache
def _edges(root: Path = PACKAGE) -> Edges:
    """(importing unit, imported unit) -> the places, for every import between two units."""
    edges: Edges = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if len(relative.parts) > 1:
            source = relative.parts[0]
        else:
            source = {"__init__.py": "(facade)", "__main__.py": "__main__"}.get(
                relative.name, relative.stem
            )
        for name, line in _imports(path, root):
            target = _unit(name)
            if target != source:
                edges[(source, target)].append(f"{relative}:{line}")
    return edges


def _wrong_way(edges: Edges) -> list[str]:
    return [
        f"{source} imports {target}: {', '.join(sites)}"
        for (source, target), sites in sorted(edges.items())
        if RANK.get(target, len(LAYERS)) >= RANK.get(source, -1)
    ]


def _cycles(edges: Edges) -> list[str]:
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            step == goal or (step not in seen and reaches(step, goal, seen | {step}))
            for step in graph[start]
        )

    return sorted(unit for unit in list(graph) if reaches(unit, unit, {unit}))


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {unit for edge in _edges() for unit in edge}
    units |= {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert sorted(units - set(RANK)) == []


def test_no_module_imports_from_a_layer_above_or_beside_its_own() -> None:
    assert _wrong_way(_edges()) == []


def test_no_cycle_between_subpackages() -> None:
    assert _cycles(_edges()) == []


@pytest.mark.parametrize(
    "source",
    [
        "from soev_pipeline.cli import load\n",
        "def f():\n    from soev_pipeline.cli.main import main\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import soev_pipeline.cli\n",
        "from ...cli import main\n",
    ],
    ids=["top level", "in a function", "type checking", "relative"],
)
def test_an_upward_import_in_any_form_is_found(tmp_path: Path, source: str) -> None:
    root = tmp_path / "soev_pipeline"
    (root / "core" / "sub").mkdir(parents=True)
    (root / "core" / "sub" / "fake.py").write_text(source, encoding="utf-8")
    (root / "cli").mkdir()
    (root / "cli" / "main.py").write_text("from soev_pipeline.core import sub\n", "utf-8")
    edges = _edges(root)
    assert _wrong_way(edges) == [f"core imports cli: core/sub/fake.py:{source.count(chr(10))}"]
    assert _cycles(edges) == ["cli", "core"]


def test_a_sibling_import_is_refused() -> None:
    assert _wrong_way({("criteria", "judges"): ["criteria/x.py:1"]}) == [
        "criteria imports judges: criteria/x.py:1"
    ]
