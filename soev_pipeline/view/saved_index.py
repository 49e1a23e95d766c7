"""The index of a scoring saved beside its report (`index.json`), and opening an index.

The aggregate step saves the index of the new scoring with the run page's plot
(`save_index`, through `html_report.write_scoring_pages`), so that a viewer opens a large
run from `report.json` and `index.json` alone (`open_index`), without its verdicts, its
evidence or the plot library. The file is derived data: it is used only while it is of
this format and names the scoring's report (by its SHA-256) and verdicts (by their size)
as they are; otherwise the index is built from the files again (docs/view.md#large-runs).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from soev_pipeline.run.archive import REPORT, VERDICTS
from soev_pipeline.run.store.files import write_text_atomically

from .index import CaseEntry, RunIndex
from .plots import Plot

INDEX = "index.json"
"""The saved index of a scoring, beside its report."""
INDEX_FORMAT = 1
"""The layout of `index.json`; one of another format is built again. Raise it when the
saved fields or the run page's plot change."""
MAX_INDEX_BYTES = 256 * 1024 * 1024
"""A saved index larger than this is passed over (an index takes about 50 bytes an
attempt)."""


def open_index(
    scoring: Path,
    evidence_path: Path,
    hidden: frozenset[str] = frozenset(),
    refresh: Callable[[], object] | None = None,
    fetch: Callable[[], object] | None = None,
) -> RunIndex:
    """The index of a scoring folder: its saved `index.json` when that still fits the
    scoring (`load_index`), else built from its verdicts and the evidence. `refresh` brings
    the evidence up to date and `fetch` the verdicts, when they are first needed (or when
    `RunIndex.prefetch` is called, once the page that opened the index is sent).

    Raises:
        ProjectError: a line of the verdicts is not a graded attempt.
    """
    saved = load_index(scoring, evidence_path, hidden)
    if saved is not None:
        saved.refresh, saved.fetch = refresh, fetch
        return saved
    for bring in (fetch, refresh):
        if bring is not None:
            bring()
    return RunIndex.build(scoring / VERDICTS, evidence_path, hidden, refresh)


def save_index(index: RunIndex, scoring: Path) -> None:
    """Write the index as `index.json` of its scoring folder, tied to the scoring's
    report and verdicts as they are now (`load_index` checks both)."""
    pairs: dict[tuple[str, str], int] = {}
    kinds: dict[str, int] = {}
    cases = [
        [
            e.case_id,
            e.suite,
            e.attempts,
            e.passed,
            e.score_sum,
            e.scored,
            sorted(pairs.setdefault(pair, len(pairs)) for pair in e.statuses),
            [[kinds.setdefault(kind, len(kinds)), count] for kind, count in e.failing.items()],
            [value for item in e.verdict_at.items() for value in item],
            [value for item in e.evidence_at.items() for value in item],
        ]
        for e in index.cases.values()
    ]
    forest = (
        None
        if index.forest is None
        else [index.forest.title, index.forest.uri, index.forest.alt, index.forest_language]
    )
    saved = {
        "soev_index": INDEX_FORMAT,
        "report_sha256": _sha256(scoring / REPORT),
        "verdicts_bytes": (scoring / VERDICTS).stat().st_size,
        "evidence_bytes": index.evidence_bytes,
        "forest": forest,
        "statuses": list(pairs),
        "kinds": list(kinds),
        "cases": cases,
    }
    write_text_atomically(scoring / INDEX, json.dumps(saved, separators=(",", ":")))


def load_index(
    scoring: Path, evidence_path: Path, hidden: frozenset[str] = frozenset()
) -> RunIndex | None:
    """The saved index of a scoring folder; None when there is none, or it does not
    read, or is of another format, or no longer matches the scoring's report and
    verdicts: then it is built again, never trusted. Verdicts not here yet (an object
    store's) are checked when they are first read (`RunIndex.current_verdicts`)."""
    path, verdicts = scoring / INDEX, scoring / VERDICTS
    try:
        info = path.stat()
        if not path.is_file() or info.st_size > MAX_INDEX_BYTES:
            return None
        saved = json.loads(path.read_bytes())
        if (
            saved["soev_index"] != INDEX_FORMAT
            or (verdicts.exists() and saved["verdicts_bytes"] != verdicts.stat().st_size)
            or saved["report_sha256"] != _sha256(scoring / REPORT)
        ):
            return None
        pairs = [(str(kind), str(status)) for kind, status in saved["statuses"]]
        kinds = [str(kind) for kind in saved["kinds"]]
        cases: dict[str, CaseEntry] = {}
        for row in saved["cases"]:
            case_id, suite, attempts, passed, score_sum, scored = row[:6]
            if case_id in hidden:
                continue
            verdict_at, evidence_at = row[8], row[9]
            cases[str(case_id)] = CaseEntry(
                str(case_id),
                str(suite),
                int(attempts),
                int(passed),
                float(score_sum),
                int(scored),
                {pairs[number] for number in row[6]},
                {kinds[kind]: int(count) for kind, count in row[7]},
                _numbers(verdict_at),
                _numbers(evidence_at),
            )
        forest = saved["forest"]
        return RunIndex(
            verdicts,
            evidence_path,
            cases,
            evidence_bytes=int(saved["evidence_bytes"]),
            forest=None if forest is None else Plot(*(str(part) for part in forest[:3])),
            forest_language=None if forest is None else str(forest[3]),
            verdicts_bytes=None if verdicts.exists() else int(saved["verdicts_bytes"]),
            hidden=hidden,
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _numbers(flat: list[Any]) -> dict[int, int]:
    """{attempt: offset} of a saved index's flat list [attempt, offset, attempt, ...]."""
    return dict(zip(map(int, flat[::2]), map(int, flat[1::2]), strict=True))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
