"""An index of one scoring's dev cases: where each attempt's lines are, and what to filter on.

A page of a run lists 50 cases and a case page reads k attempts; neither may read a whole
run. The index is built once per scoring, in one pass over `verdicts.jsonl` and one over
`evidence.jsonl` (plain `json.loads`, no models), and keeps per dev case its figures, the
statuses of its verdicts, a folded text to search, and the byte offset of each attempt's
line in both files. Pages then seek to the lines they show. Test cases are skipped while
reading: the index holds nothing of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.run.results import GradedAttempt

SEARCH_CHARS = 4000
"""How much of each reply, question and verdict detail the search sees."""

CaseStatus = Literal["failed", "passed"]
VerdictStatus = Literal["pass", "fail", "error", "not_applicable"]
STATUS_FILTERS: tuple[str, ...] = ("failed", "passed", "fail", "error", "not_applicable", "pass")


@dataclass(slots=True)
class CaseEntry:
    """One dev case of a scoring, as the run page lists and filters it."""

    case_id: str
    suite: str
    attempts: int = 0
    passed: int = 0
    score_sum: float = 0.0
    scored: int = 0
    statuses: set[tuple[str, str]] = field(default_factory=set)
    """Every (kind, status) among the verdicts of its attempts."""
    failing: dict[str, int] = field(default_factory=dict)
    """How many attempts each kind failed or errored on, in the order of the criteria."""
    verdict_at: dict[int, int] = field(default_factory=dict)
    """The byte offset of each attempt's line in verdicts.jsonl."""
    evidence_at: dict[int, int] = field(default_factory=dict)
    """The byte offset of each attempt's line in evidence.jsonl."""
    text: list[str] = field(default_factory=list)
    """The folded texts to search while the index is built; `search` once it is."""
    search: str = ""

    @property
    def pass_rate(self) -> float:
        return self.passed / self.attempts if self.attempts else 0.0

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def matches(
        self, suite: str | None, status: str | None, criterion: str | None, words: Sequence[str]
    ) -> bool:
        """Whether the case passes the run page's filters (all of them that are set)."""
        if suite and self.suite != suite:
            return False
        if status in ("failed", "passed"):
            if (self.passed == self.attempts) != (status == "passed"):
                return False
            if criterion and not any(kind == criterion for kind, _ in self.statuses):
                return False
        elif status:
            if not any(
                found == status and (not criterion or kind == criterion)
                for kind, found in self.statuses
            ):
                return False
        elif criterion and not any(kind == criterion for kind, _ in self.statuses):
            return False
        return all(word in self.search for word in words)


def _fold(text: str) -> str:
    return text[:SEARCH_CHARS].casefold()


def search_words(query: str) -> list[str]:
    """The words of a search: each must occur in a case's text, in any case."""
    return [word.casefold() for word in query.split()][:20]


@dataclass
class RunIndex:
    """The dev cases of one scoring of a run, by id, in the order of the verdicts."""

    verdicts_path: Path
    evidence_path: Path
    cases: dict[str, CaseEntry]

    @classmethod
    def build(
        cls, verdicts_path: Path, evidence_path: Path, hidden: frozenset[str] = frozenset()
    ) -> RunIndex:
        """Read both files once; the dev cases of `hidden` (test cases now) are left out.

        Raises:
            ProjectError: a line of the verdicts is not a graded attempt.
        """
        cases: dict[str, CaseEntry] = {}
        for offset, number, raw in _json_lines(verdicts_path):
            try:
                case_id, suite, split = raw["case_id"], raw["suite"], raw["split"]
                attempt, passed = int(raw["attempt"]), bool(raw["passed"])
                score, verdicts = raw.get("score"), raw["verdicts"]
                if split != "dev" or case_id in hidden:
                    continue
                entry = cases.get(case_id)
                if entry is None:
                    entry = cases[case_id] = CaseEntry(str(case_id), str(suite))
                if attempt in entry.verdict_at:
                    continue
                entry.verdict_at[attempt] = offset
                entry.attempts += 1
                entry.passed += passed
                if isinstance(score, int | float):
                    entry.score_sum += score
                    entry.scored += 1
                for verdict in verdicts:
                    kind, status = str(verdict["kind"]), str(verdict["status"])
                    entry.statuses.add((kind, status))
                    if status in ("fail", "error"):
                        entry.failing[kind] = entry.failing.get(kind, 0) + 1
                        entry.text.append(_fold(f"{kind} {verdict.get('detail', '')}"))
            except (KeyError, TypeError, ValueError):
                raise ProjectError(
                    f"{verdicts_path}: line {number}: not a graded attempt"
                ) from None
        for entry in cases.values():
            entry.text.append(entry.case_id.casefold())
        _index_evidence(evidence_path, cases)
        for entry in cases.values():
            entry.search, entry.text = "\n".join(entry.text), []
        return cls(verdicts_path, evidence_path, cases)

    def select(
        self,
        *,
        suite: str | None = None,
        status: str | None = None,
        criterion: str | None = None,
        query: str = "",
        suite_order: Sequence[str] = (),
    ) -> list[CaseEntry]:
        """The cases that pass the filters, the lowest pass rate first, then by suite and id."""
        words = search_words(query)
        order = {name: index for index, name in enumerate(suite_order)}
        chosen = [
            entry for entry in self.cases.values() if entry.matches(suite, status, criterion, words)
        ]
        chosen.sort(key=lambda e: (e.pass_rate, order.get(e.suite, len(order)), e.case_id))
        return chosen

    def graded(self, case_id: str) -> list[GradedAttempt]:
        """The graded attempts of a dev case, by attempt number (empty for any other id)."""
        entry = self.cases.get(case_id)
        if entry is None:
            return []
        offsets = [entry.verdict_at[n] for n in sorted(entry.verdict_at)]
        return [
            GradedAttempt.model_validate_json(line)
            for line in _read_at(self.verdicts_path, offsets)
        ]

    def evidence(self, case_id: str) -> dict[int, Evidence]:
        """The evidence of a dev case's attempts, by attempt number."""
        entry = self.cases.get(case_id)
        if entry is None:
            return {}
        numbers = sorted(entry.evidence_at)
        lines = _read_at(self.evidence_path, [entry.evidence_at[n] for n in numbers])
        return {
            n: Evidence.model_validate_json(line) for n, line in zip(numbers, lines, strict=True)
        }


def _index_evidence(path: Path, cases: dict[str, CaseEntry]) -> None:
    """Add each graded dev case's evidence offsets and its text (questions, replies)."""
    for offset, _, raw in _json_lines(path, tolerant=True):
        entry = cases.get(raw.get("case_id")) if isinstance(raw.get("case_id"), str) else None
        if entry is None or raw.get("split", "dev") != "dev":
            continue
        attempt = raw.get("attempt", 0)
        if not isinstance(attempt, int) or attempt in entry.evidence_at:
            continue
        entry.evidence_at[attempt] = offset
        texts = [raw.get("reply")]
        for part in (raw, *(raw.get("variants") or ())):
            if isinstance(part, dict):
                turns = part.get("turns") or ()
                texts += [turn.get("input") for turn in turns if isinstance(turn, dict)]
                if part is not raw:
                    texts.append(part.get("reply"))
        entry.text += [_fold(text) for text in texts if isinstance(text, str)]


def _json_lines(path: Path, *, tolerant: bool = False) -> Iterator[tuple[int, int, Any]]:
    """(byte offset, line number, JSON object) of each line; blank lines skipped.

    A line that is not a JSON object raises, unless `tolerant` (evidence, whose last line
    a crash may have cut short): then it is passed over, as reading the archive does.
    """
    if not path.exists():
        return
    with path.open("rb") as lines:
        offset = 0
        for number, line in enumerate(lines, start=1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except ValueError:
                raw = None
            if not isinstance(raw, dict):
                if tolerant:
                    continue
                raise ProjectError(f"{path}: line {number}: not a JSON object")
            yield start, number, raw


def _read_at(path: Path, offsets: Sequence[int]) -> list[bytes]:
    with path.open("rb") as file:
        lines = []
        for offset in offsets:
            file.seek(offset)
            lines.append(file.readline())
        return lines
