"""Human labels of judged criteria (docs/judge.md#labels): the line model, reading, appending.

A label file is JSON Lines, one `LabelLine` a line, appended by the viewer's label form
(and by hand). Reading never stops at a bad line: it is left out and reported as
`{file, line, why}`, and a `why` never quotes the line, since a line may hold a test case.
Appending takes an exclusive lock on the file, writes one whole line and syncs it to disk,
so two reviewers saving at once cannot interleave their lines.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from soev_pipeline.core.canonical import digest, sha256_text
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Case, CriterionSpec, FrozenModel, Verdict
from soev_pipeline.core.project import DEFAULT_LABELS
from soev_pipeline.core.secrets import redact
from soev_pipeline.criteria import CriterionRegistry, builtin_registry

LABELS_GLOB = DEFAULT_LABELS
"""Where label files are when project.yaml names none."""
LABELS_FILE = "labels/labels.jsonl"
"""Where the viewer appends a label when no label file exists yet."""
MAX_LINE_BYTES = 4 * 1024 * 1024
"""A longer line is left out unread: a reply is never that long, a damaged file may be."""

_BUILTIN = builtin_registry()
JUDGED_KINDS: frozenset[str] = frozenset(
    name for name in _BUILTIN if _BUILTIN.get(name).needs_judge
)
"""The built-in kinds whose verdict is the judge's: the ones a human label measures."""


class LabelLine(FrozenModel):
    """One human label: a reviewer's verdict on one judged criterion of one reply.

    `reply` is the attempt's final reply, so a label file is self-contained; `reply_sha256`
    must be its SHA-256. `nth` is the index of the criterion among the case's criteria of
    the same kind. `label` is one of the kind's labels, for the kinds that have one.
    """

    case_id: str = Field(min_length=1)
    reply_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    reply: str
    kind: str = Field(min_length=1)
    nth: int = Field(default=0, ge=0)
    passed: bool
    label: str | None = None
    by: str = Field(min_length=1, max_length=200)
    at: datetime
    note: str | None = Field(default=None, max_length=10_000)

    @field_validator("by")
    @classmethod
    def _named(cls, by: str) -> str:
        if not by.strip():
            raise ValueError("must name who labelled")
        return by.strip()

    @field_validator("at")
    @classmethod
    def _utc(cls, at: datetime) -> datetime:
        if at.tzinfo is None:
            raise ValueError("must carry a time zone, e.g. 2026-12-01T10:00:00Z")
        return at.astimezone(UTC)

    @model_validator(mode="after")
    def _hash_matches(self) -> LabelLine:
        if sha256_text(self.reply) != self.reply_sha256:
            raise ValueError("reply_sha256 is not the SHA-256 of reply")
        return self

    @classmethod
    def of(
        cls,
        *,
        case_id: str,
        reply: str,
        kind: str,
        nth: int,
        passed: bool,
        by: str,
        label: str | None = None,
        note: str | None = None,
        at: datetime | None = None,
    ) -> LabelLine:
        """A label of `reply`, hashed here, made now unless `at` says when."""
        return cls(
            case_id=case_id,
            reply_sha256=sha256_text(reply),
            reply=reply,
            kind=kind,
            nth=nth,
            passed=passed,
            label=label,
            by=by,
            at=at or datetime.now(UTC).replace(microsecond=0),
            note=note or None,
        )

    def to_line(self) -> str:
        """The label as one line of JSON (keys in the order of docs/judge.md#labels, no
        newline inside)."""
        return self.model_dump_json(exclude_none=True)


class LeftOut(FrozenModel):
    """A line of a label file that was left out, and why (never what it holds)."""

    file: str
    line: int
    why: str


@dataclass(frozen=True, slots=True)
class ReadLabel:
    """A label that was read, with where it came from."""

    label: LabelLine
    file: Path
    line: int


@dataclass(frozen=True)
class LabelsRead:
    """What `read_labels` found: the labels kept, in file and line order, and the rest."""

    labels: tuple[ReadLabel, ...]
    left_out: tuple[LeftOut, ...]


def label_files(project_dir: Path, pattern: str | None = None) -> list[Path]:
    """The label files of a project: those its `labels` glob names, else `labels/*.jsonl`.

    Sorted by path; a glob that names nothing (a folder that does not exist) gives no file.
    What the glob names that is not a folder counts, a FIFO or a device too: reading
    reports it as not a regular file, rather than reading no label from it silently.
    """
    return sorted(path for path in project_dir.glob(pattern or LABELS_GLOB) if not path.is_dir())


def label_target(project_dir: Path, pattern: str | None = None) -> Path:
    """Where a new label goes: the first file the glob names, else `labels/labels.jsonl`.

    When the glob names no file yet and would not name `labels/labels.jsonl` either (say
    `reviews/*.jsonl`), the new file is `labels.jsonl` in the glob's own folder, so that a
    label the viewer writes is one that calibration reads.
    """
    files = label_files(project_dir, pattern)
    if files:
        return files[0]
    glob = pattern or LABELS_GLOB
    candidates = [PurePosixPath(LABELS_FILE)]
    folder = _literal_folder(glob)
    if folder is not None:
        candidates.append(folder / PurePosixPath(LABELS_FILE).name)
    for candidate in candidates:
        if candidate.match(glob) or candidate.match(glob.replace("**/", "")):
            return project_dir / candidate
    return project_dir / LABELS_FILE


def labels_version(project_dir: Path, pattern: str | None = None) -> str:
    """One short hash over the label files as they are on disk: their paths and bytes.

    A label added, changed or removed, or a file added or removed, changes it; a watcher
    compares it with the recorded one to notice an edit. A file that cannot be read
    counts as empty, as one that is not a regular file (a FIFO) does.
    """
    entries = []
    for path in label_files(project_dir, pattern):
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
            content = hashlib.sha256(path.read_bytes()).hexdigest() if regular else ""
        except OSError:
            content = ""
        entries.append([path.relative_to(project_dir).as_posix(), content])
    return digest(entries)[:12]


def _literal_folder(glob: str) -> PurePosixPath | None:
    """The folders of `glob` before its first wildcard, or None when it starts with one."""
    parts = PurePosixPath(glob).parts[:-1]
    literal = list(itertools.takewhile(lambda part: not any(c in part for c in "*?["), parts))
    return PurePosixPath(*literal) if literal else None


def criterion_of(case: Case, kind: str, nth: int) -> CriterionSpec | None:
    """The `nth` criterion of `kind` among the case's criteria, or None when it has none."""
    same = [spec for spec in case.criteria if spec.kind == kind]
    return same[nth] if 0 <= nth < len(same) else None


def label_choices(
    spec: CriterionSpec, registry: CriterionRegistry | None = None
) -> tuple[str, ...]:
    """The labels a human may give for this criterion: the judge's own, as its kind says
    (`Builtin.labels`); empty for a kind whose judge answers several questions per attempt
    (nuggets, variants) or none, and for a kind that `registry` (by default the built-in
    kinds) does not have."""
    kinds = _BUILTIN if registry is None else registry
    if spec.kind not in kinds:
        return ()
    kind = kinds.get(spec.kind)
    if not kind.labelled:
        return ()
    try:
        params = kind.params_model.model_validate(spec.params)
    except ValidationError:
        return ()
    return kind.labels_of(params)


def check_label(
    label: LabelLine, cases: Mapping[str, Case], registry: CriterionRegistry | None = None
) -> str | None:
    """Why `label` cannot count against the project's cases now, or None when it can.

    The reasons name no test case: the test split is sealed, and its labels are refused.
    `registry` holds the project's kinds, for their labels (see `label_choices`).
    """
    case = cases.get(label.case_id)
    if case is None:
        return f"no case {label.case_id!r} in the project"
    if case.split == "test":
        return "a label of a test case: the test split is sealed, its labels are refused"
    spec = criterion_of(case, label.kind, label.nth)
    if spec is None:
        return f"case {case.id!r} has no criterion {label.kind!r} #{label.nth}"
    choices = label_choices(spec, registry)
    if label.label is not None and label.label not in choices:
        allowed = ", ".join(map(repr, choices)) or "none"
        return f"label {label.label!r} is not one of the labels of {label.kind!r} ({allowed})"
    return None


def _why_unparsed(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    return f"not a label line: {field + ': ' if field else ''}{first['msg']}"


def _lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """The lines of `path` by number; None for a line over `MAX_LINE_BYTES`, skipped unread."""
    with path.open("rb") as file:
        number = 0
        while True:
            chunk = file.readline(MAX_LINE_BYTES + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                while chunk and not chunk.endswith(b"\n"):
                    chunk = file.readline(MAX_LINE_BYTES)
                yield number, None
                continue
            yield number, chunk


def _parse(raw: bytes | None) -> LabelLine | str:
    if raw is None:
        return f"longer than {MAX_LINE_BYTES} bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text"
    try:
        value: Any = json.loads(text)
    except ValueError:
        return "not a JSON object"
    if not isinstance(value, dict):
        return "not a JSON object"
    try:
        return LabelLine.model_validate(value)
    except ValidationError as exc:
        return _why_unparsed(exc)


def read_labels(
    files: Iterable[Path],
    cases: Mapping[str, Case] | None = None,
    registry: CriterionRegistry | None = None,
) -> LabelsRead:
    """Read label files; every line that cannot count is left out with its reason.

    With `cases` (the project's, by id), a label whose case is gone or in the test split,
    whose kind the case no longer has, or whose label is not one of the kind's (in
    `registry`, by default the built-in kinds) is left out too. Blank lines are skipped
    silently. A file that cannot be read is one left-out entry (line 0).
    """
    kept: list[ReadLabel] = []
    left_out: list[LeftOut] = []
    for path in files:
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # opening a FIFO would wait for ever
                left_out.append(LeftOut(file=str(path), line=0, why="not a regular file"))
                continue
            for number, raw in _lines(path):
                if raw is not None and not raw.strip():
                    continue
                parsed = _parse(raw)
                if isinstance(parsed, LabelLine):
                    why = None if cases is None else check_label(parsed, cases, registry)
                    if why is None:
                        kept.append(ReadLabel(parsed, path, number))
                        continue
                else:
                    why = parsed
                left_out.append(LeftOut(file=str(path), line=number, why=why))
        except OSError as exc:
            left_out.append(LeftOut(file=str(path), line=0, why=f"cannot read: {exc.strerror}"))
    return LabelsRead(tuple(kept), tuple(left_out))


def append_label(
    path: Path,
    label: LabelLine,
    cases: Mapping[str, Case],
    registry: CriterionRegistry | None = None,
    *,
    inside: Path | None = None,
) -> None:
    """Append `label` to the label file at `path` as one line, under an exclusive lock.

    What a person typed (`by`, `note`) is redacted as every recorded text is
    (`core.secrets`): a key pasted into a note is never stored. The file and its folder
    are made when missing. A last line that a crash left without
    its newline gets one first, so the new line stands on its own. The line is synced to
    disk before the lock is let go. A write that fails (a full disk) cuts the file back to
    its size before it, so no half line is left.

    With `inside` (the project directory), the file must lie in it once links are
    resolved: a `labels/` link that leads out of the project is refused, as a label glob
    outside it is.

    Raises:
        ProjectError: the label cannot count against `cases` (a test case, a case or
            criterion the project does not have, a label the kind does not give); the
            file is not a regular file, or lies outside `inside`.
        OSError: the file cannot be written; it names the file.
    """
    why = check_label(label, cases, registry)
    if why is not None:
        raise ProjectError(f"{path}: label refused: {why}")
    typed = {"by": redact(label.by), "note": None if label.note is None else redact(label.note)}
    line = (label.model_copy(update=typed).to_line() + "\n").encode("utf-8")
    if inside is not None:
        root, where = inside.resolve(), path.resolve()
        if root not in where.parents:
            raise ProjectError(
                f"{path}: leads outside the project directory {root} (to {where}); a label "
                "is written only inside the project"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ProjectError(f"{path}: not a regular file; labels are appended to a file")
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = b"\n" + line
        try:
            written = 0
            while written < len(line):
                written += os.write(descriptor, line[written:])
            os.fsync(descriptor)
        except OSError as exc:
            os.ftruncate(descriptor, size)  # no half line for calibrate to report later
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(descriptor)  # closing lets go of the lock


def is_judged(verdict: Verdict) -> bool:
    """Whether `verdict` is the judge's: of a built-in judge kind, or of any kind that
    recorded the judge that graded it (a hooks kind that asks the judge)."""
    return verdict.kind in JUDGED_KINDS or verdict.prompt_sha is not None
