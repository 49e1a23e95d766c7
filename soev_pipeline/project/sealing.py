"""Seal the test split: sealed-test.yaml maps each test case id to the digest of the case.

Nothing here names a sealed case in a message: errors count the cases and name none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from soev_pipeline.core.errors import ProjectError, SealChangedError
from soev_pipeline.core.models import Case

from .files import load_yaml

SEAL_FILE = "sealed-test.yaml"


def read_seal(directory: Path) -> dict[str, str] | None:
    """Return the sealed digests by case id, or None when the project is not sealed."""
    path = directory / SEAL_FILE
    if not path.exists():
        return None
    try:
        raw = load_yaml(path)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ProjectError(f"{path}: {problem}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in raw.items()
    ):
        raise ProjectError(f"{path}: must map each test case id to a SHA-256 digest")
    return dict(raw)


def check_seal(directory: Path, test_cases: Sequence[Case], *, allow_additions: bool) -> None:
    """Compare the test cases with the seal, if there is one.

    Raises:
        SealChangedError: a sealed case changed or was removed.
        ProjectError: a test case is not sealed and additions are not allowed.
    """
    sealed = read_seal(directory)
    if sealed is None:
        return
    current = {case.id: case.digest() for case in test_cases}
    changed = [case_id for case_id, sha in sealed.items() if current.get(case_id) != sha]
    if changed:
        raise SealChangedError(changed)
    added = len(set(current) - set(sealed))
    if added and not allow_additions:
        noun = "case is" if added == 1 else "cases are"
        raise ProjectError(
            f"{directory / SEAL_FILE}: {added} test {noun} not sealed; "
            "run `soev-evals seal --append` to add them"
        )


@dataclass(frozen=True)
class SealResult:
    """What a seal did, in counts only."""

    path: Path
    sealed: int
    added: int
    replaced: int
    removed: int


def write_seal(directory: Path, test_cases: Sequence[Case], *, append: bool) -> SealResult:
    """Write sealed-test.yaml for `test_cases`.

    With `append`, the sealed digests are kept and only new test cases are added (the
    caller has checked that no sealed case changed). Without it, the seal is written anew.
    """
    previous = read_seal(directory) or {}
    current = {case.id: case.digest() for case in test_cases}
    if append:
        seal = dict(previous)
        for case_id, sha in current.items():
            seal.setdefault(case_id, sha)
    else:
        seal = current
    added = len(set(seal) - set(previous))
    replaced = sum(1 for key in set(seal) & set(previous) if seal[key] != previous[key])
    removed = len(set(previous) - set(seal))
    path = directory / SEAL_FILE
    _write_atomically(path, dict(sorted(seal.items())))
    return SealResult(path, len(seal), added, replaced, removed)


def _write_atomically(path: Path, seal: Mapping[str, str]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    header = "# SHA-256 of each sealed test case's canonical JSON, by `soev-evals seal`.\n"
    temporary.write_text(header + yaml.safe_dump(dict(seal), sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)
