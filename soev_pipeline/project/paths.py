"""Where a project keeps its runs and its state: one place for every default path.

<project dir>/project.yaml
<runs>/                       runs/ beside project.yaml, or --runs-dir, or the runs_dir
                              that $SOEV_PROJECTS gives the project; a folder, or an
                              object-store URL (s3://bucket/prefix)
<runs>/../.soev/              the state: the judge cache, the Dagster instance (beside
                              project.yaml when the runs are in object storage)
<runs>/../.soev/judge-cache.sqlite
<runs>/../.soev/dagster/      unless $DAGSTER_HOME is set
<runs>/../.soev/cache/suites/ parsed suite files (see `suite_cache`); safe to delete
<runs>/../.soev/probes/<project>.json  the last judge probing of a project (`probes_file`)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from soev_pipeline.core.errors import ProjectError

RUNS = "runs"
STATE = ".soev"
JUDGE_CACHE = "judge-cache.sqlite"
DAGSTER = "dagster"
SUITE_CACHE = "cache/suites"
PROBES = "probes"
OBJECT_SCHEMES = ("s3",)
"""The URL schemes of object storage that a runs folder may be (`run.store`)."""

RunsDir = Path | str
"""Where a project's runs live: a folder, or an object-store URL such as `s3://bucket/prefix`
(a `str`, as `runs_location` makes it)."""


_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def is_object_url(value: Path | str) -> bool:
    """Whether `value` names object storage (`s3://...`) rather than a folder.

    Raises:
        ProjectError: `value` is a URL of another scheme (`gs://`, `az://`, `https://`):
            taken as a folder, it would make one called `gs:` in the working folder.
    """
    if not isinstance(value, str):
        return False
    url = _URL.match(value)
    if url is None:
        return False
    if url.group(1).lower() not in OBJECT_SCHEMES:
        raise ProjectError(
            f"{value}: a runs folder is a folder or s3://bucket/prefix (S3 or an "
            f"S3-compatible store); {url.group(1)}:// is not supported"
        )
    return urlsplit(value).scheme in OBJECT_SCHEMES


def runs_location(value: Path | str, base: Path | None = None) -> RunsDir:
    """A runs folder as the archive takes it: an object-store URL without its trailing `/`,
    else an absolute path (relative to `base` when given)."""
    if is_object_url(value):
        return str(value).rstrip("/")
    path = Path(value)
    return (path if base is None else base / path).resolve()


def state_dir(runs_dir: Path) -> Path:
    """The state folder beside `runs_dir`: the judge and suite caches, the Dagster instance."""
    return runs_dir.parent / STATE


def probes_file(state: Path, project: str) -> Path:
    """The last judge probing of `project` (`soev-evals probe-judge`, the `judge_probes`
    asset), which the viewer shows: one file per project, as projects may share a state."""
    return state / PROBES / f"{project}.json"


@dataclass(frozen=True)
class ProjectPaths:
    """The paths of one project: its file, its runs and its state.

    Attributes:
        project_file: the absolute path of project.yaml.
        runs: the folder of its run archives, or their object-store URL.
    """

    project_file: Path
    runs: RunsDir

    @classmethod
    def of(cls, project_file: Path | str, runs_dir: Path | str | None = None) -> ProjectPaths:
        """The paths of the project at `project_file`, with its runs in `runs_dir`, else
        where `$SOEV_PROJECTS` puts them (see `listing`), else beside it."""
        from .listing import listing_of

        project_file = Path(project_file).resolve()
        if runs_dir:
            return cls(project_file, runs_location(runs_dir))
        listed = listing_of(project_file)
        if listed is not None and listed.runs_dir is not None:
            return cls(project_file, listed.runs_dir)
        return cls(project_file, project_file.parent / RUNS)

    @property
    def directory(self) -> Path:
        """The project directory: suite globs, rubrics, corpus and seal are relative to it."""
        return self.project_file.parent

    @property
    def state(self) -> Path:
        """Beside the runs folder; beside project.yaml when the runs are in object storage."""
        if isinstance(self.runs, str):
            return self.directory / STATE
        return state_dir(self.runs)

    @property
    def judge_cache(self) -> Path:
        return self.state / JUDGE_CACHE

    @property
    def suite_cache(self) -> Path:
        """The cache of parsed suite files, for `load(..., suite_cache=...)`."""
        return self.state / SUITE_CACHE

    @property
    def dagster_home(self) -> Path:
        """`$DAGSTER_HOME` when set, else the `dagster` folder of the state."""
        configured = os.environ.get("DAGSTER_HOME")
        return Path(configured).resolve() if configured else self.state / DAGSTER
