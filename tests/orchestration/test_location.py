"""The code location that `[tool.dg.project]` declares loads and validates."""

from __future__ import annotations

import importlib
import sys
import tomllib
import warnings
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_declared_defs_module_loads_and_validates(
    project_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]
    module_name = declared["project"]["defs_module"]
    monkeypatch.setenv("SOEV_PROJECT", str(project_path))
    for name in [key for key in sys.modules if key.startswith(module_name)]:
        monkeypatch.delitem(sys.modules, name)
    from dagster.components import load_defs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load_defs is deprecated in favour of dg's own loader
        defs = load_defs(importlib.import_module(module_name), project_root=REPO)
    dg.Definitions.validate_loadable(defs)
    keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert keys == {
        "suites",
        "judge_prompts",
        "evidence",
        "verdicts",
        "report",
        "labels",
        "judge_calibration",
        "judge_probes",
    }
    assert {job.name for job in defs.jobs or []} >= {"evaluate", "rescore"}
