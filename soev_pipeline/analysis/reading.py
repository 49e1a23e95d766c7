"""Reading the archive into columns: the scorings to read, and their verdicts and evidence.

A table is built as one list per column and made a frame once (`build_frame`): appending to
lists costs a fraction of building rows, and the values that repeat within a scoring (its
run, number, time and prompts version) are kept once per scoring and repeated by numpy.
A line of `verdicts.jsonl` whose split is `test` is passed over before it is decoded; an
evidence line of a test case, and a case of the project's test split now, as soon as it is:
no value of a test case enters a column.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import ValidationError

from soev_pipeline.core.canonical import digest
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.run.archive import (
    REPORT,
    SCORING,
    VERDICTS,
    RunArchive,
    naming,
    open_regular,
    read_json_file,
)
from soev_pipeline.run.manifest import Manifest
from soev_pipeline.run.results import GradedAttempt, GradingSummary, Report
from soev_pipeline.run.unrun import did_not_run

from .columns import Column

_TEST_LINE = re.compile(rb'\{"case_id":"(?:[^"\\]|\\.)*","suite":"(?:[^"\\]|\\.)*","split":"test"')
"""The start of a test case's line, in the layout the archive writes."""
_SUITE = re.compile(rb'\{"case_id":"(?:[^"\\]|\\.)*","suite":"((?:[^"\\]|\\.)*)","split":')

_LABEL_OF_DETAIL: dict[str, re.Pattern[str]] = {
    "behaviour.expected": re.compile(r"judged (['\"])(.*?)\1, expected "),
    "rubric.judge": re.compile(r"(?:^label |: )(['\"])(.*?)\1 (?:\(pass: |worth )"),
}
_NAME_LABEL = {"a personal name": "name", "no name in": "none"}


def judge_label(kind: str, detail: str) -> str | None:
    """The label the judge gave, as the detail of a verdict of `kind` says it.

    The kinds that ask the judge for one label write it in their detail
    (`judged 'refuse', expected 'answer'`, `label 'goed' (pass: ...)`, `a personal name in
    the reply`); the kinds that ask several questions (nuggets, variants) have none.
    """
    pattern = _LABEL_OF_DETAIL.get(kind)
    if pattern is not None:
        found = pattern.search(detail)
        return found.group(2) if found else None
    if kind == "privacy.names":
        return next(
            (label for start, label in _NAME_LABEL.items() if detail.startswith(start)), None
        )
    return None


@contextmanager
def uncollected() -> Iterator[None]:
    """No cyclic garbage collection while a table is read (the collector's state restored
    after).

    Reading a table makes hundreds of thousands of tuples, lists and strings, none of them
    in a cycle, which reference counting frees; the collector's passes over them cost a
    fifth of the time of `verdicts_frame` on the 300,000 verdicts of bench/analysis.py.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Scored:
    """One scoring of one run, to read: the run, its manifest, the folder and its summary."""

    archive: RunArchive
    manifest: Manifest
    path: Path
    summary: GradingSummary

    @property
    def run_id(self) -> str:
        return self.archive.run_id

    @property
    def number(self) -> int:
        return int(self.path.name)

    @property
    def prompts_version(self) -> str:
        """A short hash over the prompt hashes of the scoring, as Dagster's `prompts_version`."""
        return digest(self.summary.prompts)[:12]

    def report(self) -> Report:
        """The scoring's report.json, without a case list."""
        path = self.path / REPORT
        raw = read_json_file(path)
        if not isinstance(raw, dict):
            raise ProjectError(f"{path}: not a report (not a JSON object)")
        try:
            return Report.model_validate({**raw, "cases": []})
        except ValidationError as exc:
            raise ProjectError(f"{path}: not a valid report ({_first(exc)})") from None


def _first(exc: ValidationError) -> str:
    """The first problem of a validation error, on one line: its field and message."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    return f"{field + ': ' if field else ''}{first['msg']}"


def scorings_of(archive: RunArchive, manifest: Manifest, *, every: bool) -> list[Scored]:
    """The run's complete scorings (those with a report): the latest, or `every` one."""
    found = []
    for path in reversed(archive.scorings()):
        if not (path / REPORT).exists() or not (path / SCORING).exists():
            continue
        raw = read_json_file(path / SCORING)
        try:
            summary = GradingSummary.model_validate(raw)
        except ValidationError as exc:
            raise ProjectError(
                f"{path / SCORING}: not a valid scoring summary ({_first(exc)})"
            ) from None
        found.append(Scored(archive, manifest, path, summary))
        if not every:
            break
    return found[::-1]


@dataclass
class Columns:
    """The columns of a table as lists, with the values that repeat per scoring kept once."""

    names: Sequence[str]
    repeated: frozenset[str] = frozenset()
    """The columns whose values repeat per scoring (of `PER_SCORING`): not kept as lists."""
    values: dict[str, list[Any]] = field(init=False)
    segments: list[tuple[Scored, int]] = field(default_factory=list)
    """Each scoring read, with how many rows it gave."""

    def __post_init__(self) -> None:
        self.values = {name: [] for name in self.names if name not in self.repeated}


PER_SCORING = ("run_id", "run_created_at", "scoring", "prompts_version")


def _per_scoring(columns: Columns, name: str) -> Any:
    """A column of values that repeat per scoring, one per row."""
    counts = [count for _, count in columns.segments]
    if name == "run_created_at":
        moments = [scored.manifest.created_at for scored, _ in columns.segments]
        return np.repeat(_datetimes(moments), counts)
    values: list[Any] = [
        {
            "run_id": scored.run_id,
            "scoring": scored.number,
            "prompts_version": scored.prompts_version,
        }[name]
        for scored, _ in columns.segments
    ]
    return np.repeat(np.array(values, dtype=object), counts)


def _datetimes(values: Iterable[datetime | str | None]) -> pd.DatetimeIndex:
    """UTC times from datetimes or ISO 8601 texts (missing: NaT), to the microsecond."""
    texts = [value.isoformat() if isinstance(value, datetime) else value for value in values]
    return pd.DatetimeIndex(
        pd.to_datetime(pd.Series(texts, dtype=object), utc=True, format="ISO8601")
    ).as_unit("us")


def build_frame(
    schema: Sequence[Column],
    columns: Columns,
    categories: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """The frame of `columns`, each column of its documented type, in the schema's order.

    `categories` gives the categories of a categorical column, in their order; without
    them, the values in the order first seen. Each list is let go once its column is made
    (a third less memory at the peak of a large table), so `columns` is empty after.
    """
    data: dict[str, Any] = {}
    for column in schema:
        raw: Any = (
            _per_scoring(columns, column.name)
            if column.name in columns.repeated
            else columns.values.pop(column.name)
        )
        data[column.name] = _typed(column, raw, (categories or {}).get(column.name))
    return pd.DataFrame(data, copy=False)


def _typed(column: Column, raw: Any, categories: Sequence[str] | None) -> Any:
    """A column's values as an array of its type; strings go through Arrow, which turns
    a list of them into the frame's string and categorical columns several times faster
    than pandas does from the list."""
    if column.type == "category":
        encoded = pa.array(raw, type=pa.string()).dictionary_encode()
        found = encoded.dictionary.to_pylist()
        given = list(categories or ())
        known = set(given)
        ordered = given + [value for value in found if value not in known]
        code = {value: number for number, value in enumerate(ordered)}
        remap = np.array([code[value] for value in found] + [-1], dtype=np.int32)
        indices = encoded.indices.fill_null(len(found)).to_numpy()
        return pd.Categorical.from_codes(remap[indices], categories=pd.Index(ordered, dtype="str"))
    if column.type == "string":
        return pd.array(pa.array(raw, type=pa.large_string()), dtype="str")
    if column.type == "datetime":
        return raw if isinstance(raw, pd.DatetimeIndex | np.ndarray) else _datetimes(raw)
    return pd.array(raw, dtype=column.dtype)


@dataclass(frozen=True)
class Filters:
    """What to read: which suites (None: all), and the case ids to pass over (test cases)."""

    suites: frozenset[str] | None
    hidden: frozenset[str]

    def skips_line(self, line: bytes) -> bool:
        """Whether a line can be passed over undecoded: a test case's, or another suite's."""
        if _TEST_LINE.match(line):
            return True
        if self.suites is not None:
            found = _SUITE.match(line)
            if found is not None and json.loads(b'"' + found.group(1) + b'"') not in self.suites:
                return True
        return False

    def keeps(self, case_id: str, suite: str, split: str) -> bool:
        """Whether a decoded line is of a dev case that is shown, in a chosen suite."""
        return (
            split == "dev"
            and case_id not in self.hidden
            and (self.suites is None or suite in self.suites)
        )


def graded_lines(scored: Scored, filters: Filters) -> Iterator[GradedAttempt]:
    """The graded attempts of a scoring's `verdicts.jsonl` that the filters keep.

    A line of a test case or of a suite not chosen is passed over before it is decoded, by
    the layout the archive writes (as `view.index` reads it); the others are read as
    `run.grading.iter_graded` reads them, into the model of a line.

    Raises:
        ProjectError: a line is not a graded attempt.
    """
    path = scored.path / VERDICTS
    with open_regular(path) as lines, naming(path):
        for number, line in enumerate(lines, start=1):
            if not line.strip() or filters.skips_line(line):
                continue
            try:
                graded = GradedAttempt.model_validate_json(line)
            except ValidationError:
                raise ProjectError(
                    f"{path}: line {number}: not a graded attempt; "
                    f"`soev-evals rescore {scored.run_id}` grades the run anew"
                ) from None
            if filters.keeps(graded.case_id, graded.suite, graded.split):
                yield graded


_VERDICT_COLUMNS = (
    "kind", "status", "weight", "gate", "detail", "version", "judge_model", "prompt_sha"
)  # fmt: skip
"""The fields of a verdict that the table keeps, in its order."""
_VERDICT_FIELDS = attrgetter(*_VERDICT_COLUMNS)


def _criteria(kinds: list[str]) -> list[str]:
    """The criterion names of an attempt's verdicts: `kind`, then `kind#1`, `kind#2`, ..."""
    if len(set(kinds)) == len(kinds):
        return kinds
    seen: dict[str, int] = {}
    names = []
    for kind in kinds:
        nth = seen.get(kind, 0)
        seen[kind] = nth + 1
        names.append(kind if nth == 0 else f"{kind}#{nth}")
    return names


def read_verdicts(scored: Scored, filters: Filters, columns: Columns) -> None:
    """Append the verdicts of a scoring's shown dev attempts to `columns`.

    The fields of each verdict are taken as a tuple (`attrgetter`, in C) and an attempt's
    tuples are added to the columns at once; the values of the attempt are kept once per
    line and repeated at the end. Both halve the time of appending every value to its
    column.

    Raises:
        ProjectError: a line is not a graded attempt.
    """
    v = columns.values
    start = len(v["kind"])
    targets = [v[name] for name in _VERDICT_COLUMNS]
    criteria = v["criterion"]
    lines: list[tuple[str, str, int]] = []
    counts: list[int] = []
    for graded in graded_lines(scored, filters):
        if not graded.verdicts:
            continue
        by_column = list(zip(*map(_VERDICT_FIELDS, graded.verdicts), strict=True))
        for target, values in zip(targets, by_column, strict=True):
            target.extend(values)
        criteria.extend(_criteria(list(by_column[0])))
        lines.append((graded.case_id, graded.suite, graded.attempt))
        counts.append(len(graded.verdicts))
    for name, values in zip(
        ("case_id", "suite", "attempt"), zip(*lines, strict=True), strict=False
    ):
        v[name] += np.repeat(np.array(values, dtype=object), counts).tolist()
    rows = len(v["kind"]) - start
    v["split"] += ["dev"] * rows
    kinds, details, models = v["kind"], v["detail"], v["judge_model"]
    v["judge_label"] += [
        judge_label(kinds[row], details[row]) if models[row] is not None else None
        for row in range(start, len(kinds))
    ]
    columns.segments.append((scored, rows))


@dataclass(frozen=True)
class _Figures:
    """What an attempts row takes from the attempt's evidence."""

    unrun: str | None
    failure: str | None
    turns: int
    reply_chars: int | None
    citations: int
    prompt_tokens: int | None
    completion_tokens: int | None
    duration_s: float
    refusal_code: str | None
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, evidence: Evidence) -> _Figures:
        turns = evidence.all_turns()
        usages = [turn.usage for turn in turns if turn.usage is not None]
        failure = evidence.failure
        return cls(
            unrun=did_not_run(evidence),
            failure=failure.code if failure is not None else None,
            turns=len(evidence.turns),
            reply_chars=len(evidence.reply) if evidence.reply is not None else None,
            citations=len(evidence.citations),
            prompt_tokens=sum(usage.prompt_tokens for usage in usages) if usages else None,
            completion_tokens=(
                sum(usage.completion_tokens for usage in usages) if usages else None
            ),
            duration_s=sum(turn.duration_s for turn in turns),
            refusal_code=evidence.refusal_code,
            started_at=evidence.started_at,
            finished_at=evidence.finished_at,
        )


_NO_EVIDENCE = _Figures(None, None, 0, None, 0, None, None, 0.0, None, None, None)


def read_evidence(archive: RunArchive, filters: Filters) -> dict[tuple[str, int], _Figures]:
    """The figures of each (case, attempt) that the filters keep, read as every reader of
    the run reads them (`RunArchive.iter_attempts`: the last line of an attempt counts).

    Raises:
        ProjectError: a line other than the last is not an evidence line.
    """
    found: dict[tuple[str, int], _Figures] = {}
    for evidence in archive.iter_attempts(warn=False):
        if filters.keeps(evidence.case_id, evidence.suite, evidence.split):
            found[(evidence.case_id, evidence.attempt)] = _Figures.of(evidence)
    return found


def read_attempts(scored: Scored, filters: Filters, columns: Columns) -> None:
    """Append a scoring's shown dev attempts, with the figures of their evidence.

    Raises:
        ProjectError: a line of the verdicts or the evidence does not read.
    """
    evidence = read_evidence(scored.archive, filters)
    v = columns.values
    before = len(v["case_id"])
    for attempt in graded_lines(scored, filters):
        key = (attempt.case_id, attempt.attempt)
        figures = evidence.get(key, _NO_EVIDENCE)
        statuses = [verdict.status for verdict in attempt.verdicts]
        v["case_id"].append(attempt.case_id)
        v["suite"].append(attempt.suite)
        v["split"].append("dev")
        v["attempt"].append(attempt.attempt)
        v["passed"].append(attempt.passed and figures.unrun is None)
        v["score"].append(attempt.score)
        v["unrun"].append(figures.unrun)
        v["failure"].append(figures.failure)
        v["verdicts"].append(len(statuses))
        v["failed_verdicts"].append(statuses.count("fail"))
        v["error_verdicts"].append(statuses.count("error"))
        v["turns"].append(figures.turns)
        v["reply_chars"].append(figures.reply_chars)
        v["citations"].append(figures.citations)
        v["prompt_tokens"].append(figures.prompt_tokens)
        v["completion_tokens"].append(figures.completion_tokens)
        v["duration_s"].append(figures.duration_s)
        v["refusal_code"].append(figures.refusal_code)
        v["started_at"].append(figures.started_at)
        v["finished_at"].append(figures.finished_at)
    columns.segments.append((scored, len(v["case_id"]) - before))
