"""The manifest of a run: what was selected, and the digests that a resume must match."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import Field

from soev_pipeline import __version__
from soev_pipeline.core.errors import ProjectError, ResumeError
from soev_pipeline.core.models import Case, FrozenModel, Split


class Manifest(FrozenModel):
    """`manifest.json`: the run id, when, which project, suites, split and k, and digests.

    `cases` maps each selected case id to its digest; `prompts` maps each judge prompt and
    rubric to its SHA-256. `split` is None when both splits run.
    """

    run_id: str
    created_at: datetime
    project: str
    suites: tuple[str, ...]
    split: Split | None = None
    k: int = Field(ge=1)
    cases: dict[str, str]
    prompts: dict[str, str] = Field(default_factory=dict)
    runtime: str | None = None
    version: str = __version__


def build_manifest(
    *,
    run_id: str,
    project: str,
    suites: Sequence[str],
    split: Split | None,
    k: int,
    cases: Sequence[Case],
    shas: Mapping[str, str],
    runtime: str | None = None,
    created_at: datetime | None = None,
) -> Manifest:
    """Build the manifest of a new run from its selection and the prompt hashes `shas`."""
    return Manifest(
        run_id=run_id,
        created_at=created_at or datetime.now(UTC),
        project=project,
        suites=tuple(suites),
        split=split,
        k=k,
        cases={case.id: case.digest() for case in cases},
        prompts=dict(shas),
        runtime=runtime,
    )


def check_resumable(manifest: Manifest, cases: Sequence[Case], shas: Mapping[str, str]) -> None:
    """Refuse to resume when the selected cases or the prompt hashes changed since the start.

    The message counts the changes and names dev cases only.

    Raises:
        ResumeError: a case digest or a prompt hash differs, or a case was added or removed.
    """
    current = {case.id: case for case in cases}
    changed = sorted(
        case_id
        for case_id in set(manifest.cases) | set(current)
        if case_id not in current
        or case_id not in manifest.cases
        or current[case_id].digest() != manifest.cases[case_id]
    )
    problems: list[str] = []
    if changed:
        named = [
            case_id for case_id in changed if case_id in current and current[case_id].split == "dev"
        ]
        hidden = len(changed) - len(named)
        listed = ", ".join(named[:5]) + (" ..." if len(named) > 5 else "")
        parts = [part for part in (listed, f"{hidden} other case(s)" if hidden else "") if part]
        problems.append(
            f"{len(changed)} case(s) changed, were added or were removed ({'; '.join(parts)})"
        )
    prompts = sorted(
        name
        for name in set(manifest.prompts) | set(shas)
        if manifest.prompts.get(name) != shas.get(name)
    )
    if prompts:
        problems.append(f"judge prompts or rubrics changed: {', '.join(prompts)}")
    if problems:
        raise ResumeError(
            f"run {manifest.run_id!r} cannot be resumed: {'; '.join(problems)}; "
            "start a new run, or restore the files"
        )


def check_same_project(manifest: Manifest, project: str) -> None:
    """Refuse a run archive that belongs to another project."""
    if manifest.project != project:
        raise ProjectError(
            f"run {manifest.run_id!r} belongs to project {manifest.project!r}, not {project!r}"
        )
