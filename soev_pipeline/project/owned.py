"""The files and folders that hold a project's data, which no output flag may replace."""

from __future__ import annotations

import contextlib
from pathlib import Path, PurePosixPath

from soev_pipeline.core.outputs import Owned
from soev_pipeline.core.project import DEFAULT_LABELS, Project
from soev_pipeline.judges.prompts import prompts_dir

from .paths import ProjectPaths
from .sealing import SEAL_FILE


def owned_paths(paths: ProjectPaths, project: Project) -> list[Owned]:
    """The runs folder and the state beside it, project.yaml, and the files it names: its
    suites' files, the corpus, the hooks module, the seal, the label files (and their
    folder), and the judge prompts.

    Globs are matched as they are on disk now; a file the project names that does not exist
    yet is owned all the same where its name is literal.
    """
    directory = paths.directory
    owned = [
        Owned(paths.state, "the project's state folder"),
        Owned(paths.project_file, "the project file"),
        Owned(directory / SEAL_FILE, "the seal of the test cases"),
    ]
    if isinstance(paths.runs, Path):  # runs in object storage are out of an output's reach
        owned.append(Owned(paths.runs, "the runs folder"))
    for suite in project.suites:
        owned += [
            Owned(file, f"a file of suite {suite.name!r}") for file in _glob(directory, suite.files)
        ]
    if project.corpus is not None:
        owned.append(Owned(directory / project.corpus, "the corpus lookup"))
    if project.hooks is not None:
        module = directory / Path(*project.hooks.split("."))
        owned += [
            Owned(module, "the hooks module"),
            Owned(module.with_suffix(".py"), "the hooks module"),
        ]
    labels = project.labels or DEFAULT_LABELS
    folder = PurePosixPath(labels).parent
    if folder.parts and not any(mark in str(folder) for mark in "*?["):
        owned.append(Owned(directory / folder, "the labels folder"))
    owned += [Owned(file, "a label file") for file in _glob(directory, labels)]
    with contextlib.suppress(FileNotFoundError):
        owned.append(Owned(prompts_dir(), "the judge prompts"))
    return owned


def _glob(directory: Path, pattern: str) -> list[Path]:
    if Path(pattern).is_absolute():
        return []
    try:
        return [path for path in directory.glob(pattern) if path.is_file()]
    except (OSError, ValueError):
        return []
