"""Every script of `scripts/` and `bench/` imports, and every name it takes from the package,
at the top or inside a function, is there: a name moved inside the package fails here, not
in the first `make demo` or benchmark after the move."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
SCRIPTS = sorted([*REPO.glob("scripts/*.py"), *REPO.glob("bench/*.py")])


def _taken(path: Path) -> list[tuple[str, str]]:
    """The (module, name) pairs of every `from soev_pipeline... import name` in `path`."""
    return [
        (node.module or "", alias.name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("soev_pipeline")
        for alias in node.names
    ]


def _has(module: str, name: str) -> bool:
    if hasattr(importlib.import_module(module), name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_script_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(path.parent))
    name = f"_script_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)  # each runs its work under `if __name__ == "__main__"`
    missing = [f"{module}.{name}" for module, name in _taken(path) if not _has(module, name)]
    assert missing == []


def test_a_moved_name_is_found_missing(tmp_path: Path) -> None:
    script = tmp_path / "moved.py"
    script.write_text("def f():\n    from soev_pipeline.run.compare import latest_run\n")
    assert _taken(script) == [("soev_pipeline.run.compare", "latest_run")]
    assert not _has("soev_pipeline.run.compare", "latest_run")
    assert _has("soev_pipeline.run.run_attempts", "latest_run")
