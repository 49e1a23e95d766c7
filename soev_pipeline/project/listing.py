"""Several projects in one Dagster instance, listed in a small YAML file that
`$SOEV_PROJECTS` names:

```yaml
projects:
  wetwijzer: wetwijzer/project.yaml        # relative to this file
  huurwijzer:
    project: /srv/evals/huurwijzer/project.yaml
    runs_dir: /data/runs/huurwijzer        # optional, like --runs-dir; or s3://bucket/prefix
```

Each key is the project's short name in Dagster (see `orchestration.keys`): it is served as
a code location of its own, its assets are under `<name>/`, in the group `<name>`, with its
own run partitions. The CLI reads the same file: a command on a listed project writes to
that project's keys, and to its `runs_dir` unless `--runs-dir` is given.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from soev_pipeline.core.errors import ProjectError, validation_problem

from .files import load_yaml
from .paths import RunsDir, runs_location

PROJECTS_ENV = "SOEV_PROJECTS"
VIEW_URL_ENV = "SOEV_VIEW_URL"
"""Where the viewer (`soev-evals view`) of the project served alone listens; a listed
project's viewer is in `SOEV_VIEW_URL_<NAME>` (see `view_url_env`)."""
MAX_PROJECTS = 100
PROJECT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
"""A project's short name: also a Dagster group, asset key prefix and name prefix."""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    project: str = Field(min_length=1)
    runs_dir: str | None = None


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    projects: dict[str, object] = Field(min_length=1, max_length=MAX_PROJECTS)


@dataclass(frozen=True)
class ListedProject:
    """One project of a location: its short name, its file and its runs folder."""

    name: str
    project_file: Path
    runs_dir: RunsDir | None


def read_projects(path: Path) -> list[ListedProject]:
    """The projects listed in `path`, in file order.

    Raises:
        ProjectError: the file is missing, not valid YAML, or a key or name is wrong; the
            one-line message names the file and the field.
    """
    try:
        data = load_yaml(path)
    except OSError as exc:
        raise ProjectError(f"{path}: cannot read the projects file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f": line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ProjectError(f"{path}{line}: {problem}") from None
    try:
        parsed = _File.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise ProjectError(f"{path}: {validation_problem(exc)}") from None
    base = path.resolve().parent
    listed = []
    for name, entry in parsed.projects.items():
        if not PROJECT_NAME.fullmatch(name):
            raise ProjectError(
                f"{path}: projects.{name}: a project's name must be lower-case letters, digits "
                "and '_', starting with a letter, at most 40 characters"
            )
        given = _entry(path, name, entry)
        try:
            runs = runs_location(given.runs_dir, base) if given.runs_dir else None
        except ProjectError as exc:
            raise ProjectError(f"{path}: projects.{name}.runs_dir: {exc}") from None
        listed.append(ListedProject(name, (base / given.project).resolve(), runs))
    seen: set[Path] = set()
    for project in listed:
        if project.project_file in seen:
            raise ProjectError(
                f"{path}: projects.{project.name}: {project.project_file} is listed twice"
            )
        seen.add(project.project_file)
    return listed


def _entry(path: Path, name: str, entry: object) -> _Entry:
    """One project's entry: its project file, or a mapping with `project` and `runs_dir`."""
    try:
        if isinstance(entry, str):
            return _Entry(project=entry)
        if isinstance(entry, dict):
            return _Entry.model_validate(entry)
    except ValidationError as exc:
        raise ProjectError(f"{path}: projects.{name}.{validation_problem(exc)}") from None
    raise ProjectError(
        f"{path}: projects.{name}: give the path of its project.yaml, or a mapping with "
        "`project` and `runs_dir`"
    )


def listed_projects() -> list[ListedProject] | None:
    """The projects of `$SOEV_PROJECTS`, or None when it is not set."""
    configured = os.environ.get(PROJECTS_ENV)
    return read_projects(Path(configured)) if configured else None


def listing_of(project_file: Path) -> ListedProject | None:
    """The entry of `$SOEV_PROJECTS` for `project_file`, if that file lists it."""
    for item in listed_projects() or []:
        if item.project_file == project_file.resolve():
            return item
    return None


def view_url_env(name: str | None) -> str:
    """The variable that holds the address of a project's viewer: `SOEV_VIEW_URL` for the
    project served alone (`name` None), `SOEV_VIEW_URL_<NAME>` for the project that
    `$SOEV_PROJECTS` lists as `name` (`SOEV_VIEW_URL_HUURWIJZER`). `make ui` sets them.

    A listed project has a variable of its own, because each viewer serves one project:
    a link to another project's viewer would answer 404.
    """
    return f"{VIEW_URL_ENV}_{name.upper()}" if name else VIEW_URL_ENV


def view_url(name: str | None) -> str | None:
    """The address of the viewer of project `name` (None: the project served alone), without
    a trailing `/`, or None when none is set; a run's page is `<address>/runs/<run id>`."""
    return os.environ.get(view_url_env(name), "").rstrip("/") or None
