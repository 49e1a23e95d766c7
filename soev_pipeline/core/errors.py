"""Errors, split by who must act on them.

The `ProjectError` family is for the user's files: each message names the file and,
where there is one, the case and the field. `JudgeError` is for the judge, `ArmError`
for the system under test. A criterion never raises for one case: it returns a verdict
with the status error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError


def where(
    path: str | Path | None = None,
    *,
    line: int | None = None,
    column: int | None = None,
    case: str | None = None,
    split: str | None = None,
    position: int | None = None,
    field: str | None = None,
) -> str:
    """Return the place of a problem, `file: case 'id': field`, leaving out what is None.

    A case is named by its id, or by its number in the file when it has none. A case of
    the test split is only ever `test case #N`: a test case id is secret, and an error
    message may end up anywhere.

    Args:
        path: the file.
        line: the line in the file, counted from 1: `file: line L, column C`.
        column: the column on that line, counted from 1.
        case: the case id.
        split: the case's split; "test" hides the id.
        position: the case's index among the cases of the file, counted from 0.
        field: the field path in the file or in the case, e.g. `criteria[0]`.
    """
    parts: list[str] = []
    if path is not None:
        parts.append(str(path))
    if line is not None:
        parts.append(f"line {line}" if column is None else f"line {line}, column {column}")
    if split == "test":
        parts.append("a test case" if position is None else f"test case #{position + 1}")
    elif case is not None:
        parts.append(f"case {case!r}")
    elif position is not None:
        parts.append(f"case #{position + 1}")
    if field is not None:
        parts.append(field)
    return ": ".join(parts)


def validation_problem(exc: ValidationError, *, skip: int = 0) -> str:
    """Return `field: message` for the first error of `exc`, and how many more there are.

    An extra key reads "unknown key", the usual typo. The field is the error's location
    after its first `skip` parts, which the caller's place already names (`cases`, 3);
    an error about the whole input is `(top level)`.
    """
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    field = ".".join(str(part) for part in loc[skip:]) if loc else "(top level)"
    message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
    more = exc.error_count() - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{field}: {message}{suffix}" if field else f"{message}{suffix}"


class SoevError(Exception):
    """The base of every error this package raises on purpose."""


class ProjectError(SoevError):
    """The project's files are invalid: project.yaml, a suite, the corpus lookup or the seal."""


class OutputPathError(ProjectError):
    """A path given to an output flag (`--junit FILE`, `--html FILE`) that may not be
    written: a folder, a device, a symbolic link, or a file of the project or its runs.
    A usage error: the command line, not the project, is wrong."""


class SuiteError(ProjectError):
    """A suite has no file, or a suite file is invalid."""


class UnknownCriterionError(ProjectError):
    """A criterion names a kind that the registry does not have."""


class CriterionParamsError(ProjectError):
    """A criterion has parameters that its kind's parameter model refuses."""


class DuplicateCriterionError(ProjectError):
    """Two criterion kinds have the same name."""


class HooksError(ProjectError, ImportError):
    """The project's hooks module cannot be imported: missing, or its own code failed.

    An `ImportError` as the reference promises for `load`, and a `ProjectError` whose one
    line names the hooks file and the line.
    """


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


class UnreachableSystemError(ArmError):
    """The first attempts of a run all failed the same way before any reply: a wrong route,
    key or address rather than the assistant's answers. The run stops and stays resumable;
    the message is one line that names the failure and `system.base_url`
    (docs/runs.md#a-run-that-cannot-reach-the-assistant).

    Attributes:
        reason: how they failed: `HTTP 404`, say, or `connect_error`.
        attempts: how many attempts failed so.
        base_url: where the system was asked.
        run_id: the run, kept for a resume.
    """

    def __init__(
        self, reason: str, attempts: int, detail: str, *, base_url: str, run_id: str, where: str
    ) -> None:
        self.reason, self.attempts, self.base_url, self.run_id = reason, attempts, base_url, run_id
        first = "the only attempt" if attempts == 1 else f"the first {attempts} attempts"
        said = f" ({detail})" if detail and detail != reason else ""
        super().__init__(
            f"{where}: system.base_url {base_url}: {first} of run {run_id!r} "
            f"{'' if attempts == 1 else 'all '}failed with {reason} before any reply{said}; "
            "check the address, the route and the key. The run is kept: resume it once the "
            f"system answers (soev-evals run --resume {run_id})"
        )


class LanguageDetectionError(SoevError):
    """The language of a text could not be detected."""
