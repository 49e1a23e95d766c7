"""Errors, split by who must act on them.

The `ProjectError` family is for the user's files: each message names the file and,
where there is one, the case and the field. `JudgeError` is for the judge, `ArmError`
for the system under test. A criterion never raises for one case: it returns a verdict
with the status error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def where(
    path: str | Path | None = None, *, case: str | None = None, field: str | None = None
) -> str:
    """Return the place of a problem as `file: case 'id': field`, leaving out what is None."""
    parts: list[str] = []
    if path is not None:
        parts.append(str(path))
    if case is not None:
        parts.append(f"case {case!r}")
    if field is not None:
        parts.append(field)
    return ": ".join(parts)


class SoevError(Exception):
    """The base of every error this package raises on purpose."""


class ProjectError(SoevError):
    """The project's files are invalid: project.yaml, a suite, the corpus lookup or the seal."""


class SuiteError(ProjectError):
    """A suite has no file, or a suite file is invalid."""


class UnknownCriterionError(ProjectError):
    """A criterion names a kind that the registry does not have."""


class CriterionParamsError(ProjectError):
    """A criterion has parameters that its kind's parameter model refuses."""


class DuplicateCriterionError(ProjectError):
    """Two criterion kinds have the same name."""


class ResumeError(ProjectError):
    """A run cannot be resumed: its cases or prompts changed, or it does not exist."""


class SealChangedError(ProjectError):
    """Sealed test cases changed or were removed since the seal.

    The message lists the ids; `aggregate_message` counts them and names none, so the CLI
    can print it without showing sealed content.
    """

    def __init__(self, changed_ids: Sequence[str]) -> None:
        self.changed_ids = sorted(changed_ids)
        count = len(self.changed_ids)
        noun = "case" if count == 1 else "cases"
        self.aggregate_message = (
            f"sealed-test.yaml: {count} sealed test {noun} changed or were removed since the "
            "seal; restore them, or seal again on purpose"
        )
        listed = ", ".join(self.changed_ids)
        super().__init__(f"sealed test cases changed or were removed since the seal: {listed}")


class JudgeError(SoevError):
    """The judge could not give a valid label."""


class ArmError(SoevError):
    """The system under test could not be reached or configured."""


class LanguageDetectionError(SoevError):
    """The language of a text could not be detected."""
