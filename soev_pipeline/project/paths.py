"""Where a project keeps its runs and its state: one place for every default path.

<project dir>/project.yaml
<runs>/                       runs/ beside project.yaml, or --runs-dir
<runs>/../.soev/              the state: the judge cache, the Dagster instance
<runs>/../.soev/judge-cache.sqlite
<runs>/../.soev/dagster/      unless $DAGSTER_HOME is set
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RUNS = "runs"
STATE = ".soev"
JUDGE_CACHE = "judge-cache.sqlite"
DAGSTER = "dagster"


def state_dir(runs_dir: Path) -> Path:
    """The state folder beside `runs_dir`: the judge cache and the Dagster instance."""
    return runs_dir.parent / STATE


@dataclass(frozen=True)
class ProjectPaths:
    """The paths of one project: its file, its runs and its state.

    Attributes:
        project_file: the absolute path of project.yaml.
        runs: the folder of its run archives.
    """

    project_file: Path
    runs: Path

    @classmethod
    def of(cls, project_file: Path | str, runs_dir: Path | str | None = None) -> ProjectPaths:
        """The paths of the project at `project_file`, with its runs in `runs_dir` or beside it."""
        project_file = Path(project_file).resolve()
        runs = Path(runs_dir).resolve() if runs_dir else project_file.parent / RUNS
        return cls(project_file, runs)

    @property
    def directory(self) -> Path:
        """The project directory: suite globs, rubrics, corpus and seal are relative to it."""
        return self.project_file.parent

    @property
    def state(self) -> Path:
        return state_dir(self.runs)

    @property
    def judge_cache(self) -> Path:
        return self.state / JUDGE_CACHE

    @property
    def dagster_home(self) -> Path:
        """`$DAGSTER_HOME` when set, else the `dagster` folder of the state."""
        configured = os.environ.get("DAGSTER_HOME")
        return Path(configured).resolve() if configured else self.state / DAGSTER
