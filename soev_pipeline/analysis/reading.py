"""Reading the archive into columns: the scorings to read, and their verdicts and evidence.

A table is built as one list per column and made a frame once (`build_frame`): appending to
lists costs a fraction of building rows, and the values that repeat within a scoring (its
run, number, time and prompts version) are kept once per scoring and repeated by numpy.
A line of `verdicts.jsonl` or `evidence.jsonl` whose split is `test` is passed over before
it is decoded, and a case of the project's test split now is passed over after: no value
of a test case enters a column.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from soev_pipeline.core.canonical import digest
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import STATUSES, Failure
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
from soev_pipeline.run.results import GradingSummary, Report
from soev_pipeline.run.unrun import infrastructure

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
        except ValueError as exc:
            raise ProjectError(f"{path}: not a valid report ({exc})") from None


def scorings_of(archive: RunArchive, manifest: Manifest, *, every: bool) -> list[Scored]:
    """The run's complete scorings (those with a report): the latest, or `every` one."""
    found = []
    for path in reversed(archive.scorings()):
        if not (path / REPORT).exists() or not (path / SCORING).exists():
            continue
        raw = read_json_file(path / SCORING)
        try:
            summary = GradingSummary.model_validate(raw)
        except ValueError as exc:
            raise ProjectError(f"{path / SCORING}: not a valid scoring summary ({exc})") from None
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

    def keeps(self, raw: Mapping[str, Any]) -> bool:
        """Whether a decoded line is of a dev case that is shown, in a chosen suite."""
        return (
            raw.get("split", "dev") == "dev"
            and raw["case_id"] not in self.hidden
            and (self.suites is None or raw.get("suite", "") in self.suites)
        )


def graded_lines(scored: Scored, filters: Filters) -> Iterator[dict[str, Any]]:
    """The decoded lines of a scoring's `verdicts.jsonl` that the filters keep.

    Raises:
        ProjectError: a line is not a graded attempt.
    """
    path = scored.path / VERDICTS
    with open_regular(path) as lines, naming(path):
        for number, line in enumerate(lines, start=1):
            if not line.strip() or filters.skips_line(line):
                continue
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict) or not filters.keeps(raw):
                    continue
                raw["attempt"] = int(raw["attempt"])
                if not isinstance(raw["verdicts"], list):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                raise ProjectError(
                    f"{path}: line {number}: not a graded attempt; "
                    f"`soev-evals rescore {scored.run_id}` grades the run anew"
                ) from None
            yield raw


_VERDICT_FIELDS = itemgetter(
    "kind", "status", "weight", "gate", "detail", "version", "judge_model", "prompt_sha"
)
"""The fields of a verdict that the table keeps, in the order of `_VERDICT_COLUMNS`."""
_VERDICT_COLUMNS = (
    "kind", "status", "weight", "gate", "detail", "version", "judge_model", "prompt_sha"
)  # fmt: skip


def _verdict_fields(verdict: Any) -> tuple[Any, ...]:
    """The fields of a verdict that lacks some (written by hand): the model's defaults."""
    if not isinstance(verdict, dict) or "kind" not in verdict or "status" not in verdict:
        raise TypeError("not a verdict")
    return (
        verdict["kind"],
        verdict["status"],
        verdict.get("weight", 1.0),
        verdict.get("gate", False),
        verdict.get("detail", ""),
        verdict.get("version", ""),
        verdict.get("judge_model"),
        verdict.get("prompt_sha"),
    )


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

    The fields of each verdict are taken as a tuple (`itemgetter`, in C) and an attempt's
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
    path = scored.path / VERDICTS
    for raw in graded_lines(scored, filters):
        verdicts = raw["verdicts"]
        try:
            fields = list(map(_VERDICT_FIELDS, verdicts))
        except (KeyError, TypeError):
            try:
                fields = [_verdict_fields(verdict) for verdict in verdicts]
            except TypeError:
                raise ProjectError(
                    f"{path}: case {raw['case_id']!r}, attempt {raw['attempt']}: "
                    "a verdict without a kind or a status"
                ) from None
        if not fields:
            continue
        by_column = list(zip(*fields, strict=True))
        for target, values in zip(targets, by_column, strict=True):
            target.extend(values)
        criteria.extend(_criteria(list(by_column[0])))
        lines.append((raw["case_id"], raw["suite"], raw["attempt"]))
        counts.append(len(fields))
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
    unknown = set(v["status"][start:]) - set(STATUSES)
    if unknown:
        raise ProjectError(f"{path}: a verdict has the status {sorted(unknown)[0]!r}")
    columns.segments.append((scored, rows))


@dataclass(frozen=True)
class _Evidence:
    """What an attempts row takes from an evidence line."""

    unrun: str | None
    failure: str | None
    turns: int
    reply_chars: int | None
    citations: int
    prompt_tokens: int | None
    completion_tokens: int | None
    duration_s: float
    refusal_code: str | None
    started_at: str | None
    finished_at: str | None


def _evidence_of(raw: dict[str, Any]) -> _Evidence:
    """The figures of an evidence line, decoded as JSON (so any layout reads)."""
    turns: list[dict[str, Any]] = list(raw.get("turns") or ())
    for variant in raw.get("variants") or ():
        turns += variant.get("turns") or ()
    prompt = completion = 0
    counted = False
    duration = 0.0
    failure: str | None = None
    unrun: str | None = None
    for turn in turns:
        usage = turn.get("usage")
        if usage:
            counted = True
            prompt += int(usage.get("prompt_tokens", 0))
            completion += int(usage.get("completion_tokens", 0))
        duration += float(turn.get("duration_s") or 0.0)
        failed = turn.get("failure")
        if failed:
            failure = failure or str(failed.get("code", ""))
            if unrun is None and infrastructure(Failure.model_validate(failed)):
                unrun = str(failed.get("code", ""))
    reply = raw.get("reply")
    return _Evidence(
        unrun=unrun,
        failure=failure,
        turns=len(raw.get("turns") or ()),
        reply_chars=len(reply) if isinstance(reply, str) else None,
        citations=len(raw.get("citations") or ()),
        prompt_tokens=prompt if counted else None,
        completion_tokens=completion if counted else None,
        duration_s=duration,
        refusal_code=raw.get("refusal_code"),
        started_at=raw.get("started_at"),
        finished_at=raw.get("finished_at"),
    )


_NO_EVIDENCE = _Evidence(None, None, 0, None, 0, None, None, 0.0, None, None, None)


def read_evidence(
    archive: RunArchive, filters: Filters, wanted: set[tuple[str, int]]
) -> dict[tuple[str, int], _Evidence]:
    """The figures of the `wanted` (case, attempt) pairs: the last line of each counts.

    Only the last line may be broken (a crash cut it short); it is passed over, as every
    reader of the archive does. A broken line before it is damage, and stops the reading.

    Raises:
        ProjectError: a line other than the last is not an evidence line.
    """
    path = archive.evidence_path
    found: dict[tuple[str, int], _Evidence] = {}
    if not path.exists():
        return found
    broken: int | None = None
    with open_regular(path) as lines, naming(path):
        for number, line in enumerate(lines, start=1):
            if broken is not None:
                raise ProjectError(
                    f"{path}: line {broken}: not a valid evidence line "
                    "(only a last line cut short by a crash is skipped)"
                )
            if not line.strip() or filters.skips_line(line):
                continue
            try:
                if not line.endswith(b"\n"):
                    raise ValueError
                raw = json.loads(line)
                key = (raw["case_id"], int(raw.get("attempt", 0)))
                if key in wanted and filters.keeps(raw):
                    found[key] = _evidence_of(raw)
            except (ValueError, KeyError, TypeError, AttributeError):
                broken = number
    return found


def read_attempts(
    scored: Scored,
    filters: Filters,
    columns: Columns,
    evidence: Mapping[tuple[str, int], _Evidence] | None = None,
) -> None:
    """Append a scoring's shown dev attempts, with the figures of their evidence."""
    graded = list(graded_lines(scored, filters))
    if evidence is None:
        wanted = {(raw["case_id"], raw["attempt"]) for raw in graded}
        evidence = read_evidence(scored.archive, filters, wanted)
    v = columns.values
    for raw in graded:
        key = (raw["case_id"], raw["attempt"])
        figures = evidence.get(key, _NO_EVIDENCE)
        statuses = [verdict["status"] for verdict in raw["verdicts"]]
        score = raw.get("score")
        v["case_id"].append(key[0])
        v["suite"].append(raw["suite"])
        v["split"].append("dev")
        v["attempt"].append(key[1])
        v["passed"].append(bool(raw["passed"]) and figures.unrun is None)
        v["score"].append(float(score) if isinstance(score, int | float) else None)
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
    columns.segments.append((scored, len(graded)))
