"""The code location of one evaluation project.

`defs` serves the project that `$SOEV_PROJECT` names (default: the demo project of this
repository); `$SOEV_RUNS_DIR` moves its runs, as `--runs-dir` does for the CLI.
`dg dev` (through `[tool.dg]` in pyproject.toml), `dagster dev -w workspace.yaml` and
the top-level definitions.py load it.

Several projects in one Dagster instance: list them in the file `$SOEV_PROJECTS` names and
serve each as a code location of its own, by its name as the attribute of this module
(workspace.yaml: `python_module: {module_name: soev_pipeline.orchestration.location.definitions,
attribute: huurwijzer, location_name: huurwijzer}`; `location.workspace_for` writes one).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.orchestration.definitions import definitions_for
from soev_pipeline.project.listing import listed_projects

DEMO_PROJECT = Path(__file__).resolve().parents[3] / "examples" / "demo" / "project.yaml"
MODULE = __name__


@cache
def listed(name: str) -> dg.Definitions:
    """The definitions of the project `$SOEV_PROJECTS` lists as `name`."""
    for item in listed_projects() or []:
        if item.name == name:
            return definitions_for(item.project_file, item.runs_dir, name=item.name)
    raise ProjectError(f"$SOEV_PROJECTS: no project named {name!r} is listed")


def __getattr__(name: str) -> Any:
    """A listed project's definitions by its name, built when first asked for: so a code
    location loads its own project only."""
    projects = listed_projects() or []
    if not name.startswith("__") and any(item.name == name for item in projects):
        return listed(name)
    if name == "defs" and projects:
        names = ", ".join(item.name for item in projects)
        raise AttributeError(
            f"$SOEV_PROJECTS lists several projects ({names}): serve each as a code location "
            f"of its own, with its name as the attribute of {MODULE} (docs/deploy.md)"
        )
    raise AttributeError(f"module {MODULE!r} has no attribute {name!r}")


if not os.environ.get("SOEV_PROJECTS"):
    defs = definitions_for(
        os.environ.get("SOEV_PROJECT") or DEMO_PROJECT, os.environ.get("SOEV_RUNS_DIR") or None
    )
