"""An index of one scoring's dev cases: where each attempt's lines are, and what to filter on.

A page of a run lists 50 cases and a case page reads k attempts; neither may read a whole
run. The index is built once per scoring, in one pass over `verdicts.jsonl` and one over
`evidence.jsonl`, and keeps per dev case its figures, the statuses of its verdicts, and the
byte offset of each attempt's line in both files; pages then seek to the lines they show.
The lines are read by the layout the archive writes them in, without decoding the replies
and details (a quarter of the time of `json.loads` on the 20,000-attempt run of
bench/view.py), and as any JSON when they have another. The text to search (questions,
replies, cited ids) is read on the first search. Test cases are skipped while reading: the
index holds nothing of them.

The aggregate step saves the index beside the report (`saved_index`), so that a viewer opens
a large run without reading its verdicts or its evidence; those are read when a page first
needs them, and checked then: the evidence may have grown since (a resume), and a line found
at an offset that is not the attempt's sends the index back to its file once.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.run.results import GradedAttempt

from .plots import Plot

SEARCH_CHARS = 4000
"""How much of each question and reply the search sees."""

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
    """The folded texts to search while they are read; `search` once they are."""
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


_VERDICTS_HEAD = re.compile(
    rb'\{"case_id":"([^"\\]+)","suite":"([^"\\]*)","split":"(dev|test)","attempt":(\d+),'
    rb'"score":(null|[-+.eE0-9]+),"passed":(true|false),"verdicts":\['
)
_VERDICT = re.compile(rb'"kind":"([^"\\]+)","status":"([a-z_]+)"')
_EVIDENCE_HEAD = re.compile(
    rb'\{"case_id":"([^"\\]+)","suite":"[^"\\]*","split":"(dev|test)","attempt":(\d+),'
)


@dataclass(frozen=True, slots=True)
class _Graded:
    """What the index takes from a line of verdicts.jsonl."""

    case_id: str
    suite: str
    split: str
    attempt: int
    score: float | None
    passed: bool
    verdicts: list[tuple[str, str]]


def _graded(line: bytes) -> _Graded:
    """Read a verdicts line: by its known layout (the one `GradedAttempt` writes) when it
    has it, which skips decoding every detail, else as any JSON.

    Inside a JSON string every quote is escaped, so `"kind":"` can only be a key.

    Raises:
        KeyError, TypeError, ValueError: the line is not a graded attempt.
    """
    head = _VERDICTS_HEAD.match(line)
    if head is not None:
        case_id, suite, split, attempt, score, passed = head.groups()
        return _Graded(
            case_id.decode(),
            suite.decode(),
            split.decode(),
            int(attempt),
            None if score == b"null" else float(score),
            passed == b"true",
            [(k.decode(), s.decode()) for k, s in _VERDICT.findall(line, head.end())],
        )
    raw = json.loads(line)
    score = raw.get("score")
    return _Graded(
        str(raw["case_id"]),
        str(raw["suite"]),
        str(raw["split"]),
        int(raw["attempt"]),
        float(score) if isinstance(score, int | float) else None,
        bool(raw["passed"]),
        [(str(v["kind"]), str(v["status"])) for v in raw["verdicts"]],
    )


def _evidence_key(line: bytes) -> tuple[str, str, int] | None:
    """(case id, split, attempt) of an evidence line; None for one that does not read."""
    head = _EVIDENCE_HEAD.match(line)
    if head is not None:
        return head.group(1).decode(), head.group(2).decode(), int(head.group(3))
    try:
        raw = json.loads(line)
        return str(raw["case_id"]), str(raw.get("split", "dev")), int(raw.get("attempt", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass
class RunIndex:
    """The dev cases of one scoring of a run, by id, in the order of the verdicts.

    The search text of the cases is read on the first search (or by `make_searchable`),
    not with the rest: a plain page of cases needs none of it. The evidence is read when
    an attempt's evidence is first asked for, after `refresh` has brought it up to date
    (an object store downloads it then).
    """

    verdicts_path: Path
    evidence_path: Path
    cases: dict[str, CaseEntry]
    evidence_bytes: int = 0
    """How much of the evidence file the offsets cover: up to the end of its last whole line."""
    forest: Plot | None = None
    """The run page's plot of the scoring's report, when the saved index holds it."""
    forest_language: str | None = None
    """The language the saved plot's words are in: a page in another draws its own."""
    refresh: Callable[[], object] | None = None
    """Brings `evidence_path` up to date with the archive before it is read."""
    fetch: Callable[[], object] | None = None
    """Brings `verdicts_path` from the archive (an object store) before it is first read."""
    verdicts_bytes: int | None = None
    """The size of the verdicts a saved index was made from, while it is not yet checked
    (the verdicts were not here when it was loaded)."""
    hidden: frozenset[str] = frozenset()
    searchable: bool = False
    """Whether the text to search has been read (`make_searchable`)."""
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _prefetched: bool = field(default=False, repr=False)

    @classmethod
    def build(
        cls,
        verdicts_path: Path,
        evidence_path: Path,
        hidden: frozenset[str] = frozenset(),
        refresh: Callable[[], object] | None = None,
    ) -> RunIndex:
        """Read both files once; the dev cases of `hidden` (test cases now) are left out.

        Raises:
            ProjectError: a line of the verdicts is not a graded attempt.
        """
        index = cls(verdicts_path, evidence_path, _read_verdicts(verdicts_path, hidden))
        index.refresh, index.hidden = refresh, hidden
        index.current_evidence()
        return index

    def prefetch(self) -> None:
        """Bring the verdicts (`fetch`) and the evidence (`refresh`) of a saved index not
        checked yet from the archive in two threads, once: a case page after it then finds
        them here. Each is fetched again, at no cost, when it is first read. Called once the
        first page is sent (`RunStore.prefetch`), so that it does not slow that page."""
        with self._lock:
            if self._prefetched or self.verdicts_bytes is None:
                return
            self._prefetched = True
        for bring in (self.fetch, self.refresh):
            if bring is not None:
                threading.Thread(
                    target=_quietly, args=(bring,), name="soev-view-prefetch", daemon=True
                ).start()

    def current_verdicts(self) -> None:
        """Bring the verdicts here (`fetch`) and check them against the saved index they
        were not here to check when it was loaded: verdicts of another size are read again
        whole, with the evidence."""
        with self._lock:
            if self.fetch is not None:
                self.fetch()
                self.fetch = None
            if self.verdicts_bytes is None:
                return
            try:
                size: int | None = self.verdicts_path.stat().st_size
            except OSError:
                size = None
            if size != self.verdicts_bytes:
                self.cases = _read_verdicts(self.verdicts_path, self.hidden)
                self._reread_evidence()
            self.verdicts_bytes = None

    def current_evidence(self) -> None:
        """Bring the evidence offsets up to date with the archive: the lines appended since
        they were read (a resume) are read; from the start when the file shrank."""
        with self._lock:
            if self.refresh is not None:
                self.refresh()
            try:
                size = self.evidence_path.stat().st_size
            except OSError:
                size = 0
            if size < self.evidence_bytes:
                self._reread_evidence()
            elif size > self.evidence_bytes:
                self._read_evidence(self.evidence_bytes)

    def _reread_evidence(self) -> None:
        for entry in self.cases.values():
            entry.evidence_at.clear()
        self._read_evidence(0)

    def _read_evidence(self, start: int) -> None:
        """Take the offsets of the evidence lines from byte `start` on."""
        end = start
        for offset, _, line in _lines(self.evidence_path, start):
            if not line.endswith(b"\n"):
                break  # cut short: read again once it is whole
            end = offset + len(line)
            key = _evidence_key(line)
            if key is None or key[1] != "dev" or key[0] not in self.cases:
                continue
            self.cases[key[0]].evidence_at[key[2]] = offset  # the last line of an attempt counts
        self.evidence_bytes = max(end, start)

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
        if words:
            self.make_searchable()
        order = {name: index for index, name in enumerate(suite_order)}
        chosen = [
            entry for entry in self.cases.values() if entry.matches(suite, status, criterion, words)
        ]
        chosen.sort(key=lambda e: (e.pass_rate, order.get(e.suite, len(order)), e.case_id))
        return chosen

    def make_searchable(self) -> None:
        """Read the text to search, once: each case's id, and the questions, replies and
        cited sources of its attempts (the variants' too)."""
        with self._lock:
            if self.searchable:
                return
            self.current_evidence()
            owners = {
                offset: entry
                for entry in self.cases.values()
                for offset in entry.evidence_at.values()
            }
            for offset, _, line in _lines(self.evidence_path):
                entry = owners.get(offset)
                if entry is not None:
                    entry.text += _evidence_texts(json.loads(line))
            for entry in self.cases.values():
                entry.search = "\n".join([entry.case_id.casefold(), *entry.text])
                entry.text = []
            self.searchable = True

    def graded(self, case_id: str) -> list[GradedAttempt]:
        """The graded attempts of a dev case, by attempt number (empty for any other id)."""
        self.current_verdicts()
        entry = self.cases.get(case_id)
        if entry is None:
            return []
        wanted = [(case_id, n) for n in sorted(entry.verdict_at)]
        try:
            found = self._graded(entry)
        except ProjectError:
            found = []
        if [(g.case_id, g.attempt) for g in found] != wanted:
            with self._lock:  # the offsets are not of this file: read them again
                fresh = _read_verdicts(self.verdicts_path, frozenset())
                for other in self.cases.values():
                    other.verdict_at = (
                        fresh[other.case_id].verdict_at if other.case_id in fresh else {}
                    )
            found = self._graded(entry)
        return found

    def _graded(self, entry: CaseEntry) -> list[GradedAttempt]:
        offsets = [entry.verdict_at[n] for n in sorted(entry.verdict_at)]
        try:
            return [
                GradedAttempt.model_validate_json(line)
                for line in _read_at(self.verdicts_path, offsets)
            ]
        except ValidationError:
            raise ProjectError(
                f"{self.verdicts_path}: a line of case {entry.case_id!r} is not a graded attempt"
            ) from None

    def evidence(self, case_id: str) -> dict[int, Evidence]:
        """The evidence of a dev case's attempts, by attempt number."""
        entry = self.cases.get(case_id)
        if entry is None:
            return {}
        self.current_evidence()
        lines = self._evidence_lines(entry)
        if any(_evidence_key(line) != (case_id, "dev", n) for n, line in lines.items()):
            with self._lock:
                self._reread_evidence()  # the offsets are not of this file: an older index
            lines = self._evidence_lines(entry)
        found = {}
        for number, line in lines.items():
            try:
                found[number] = Evidence.model_validate_json(line)
            except ValidationError:
                continue  # damaged: the page shows the attempt without its evidence
        return found

    def _evidence_lines(self, entry: CaseEntry) -> dict[int, bytes]:
        with self._lock:
            numbers = sorted(entry.evidence_at)
            offsets = [entry.evidence_at[n] for n in numbers]
        if not offsets:
            return {}
        return dict(zip(numbers, _read_at(self.evidence_path, offsets), strict=True))


def _read_verdicts(verdicts_path: Path, hidden: frozenset[str]) -> dict[str, CaseEntry]:
    """The dev cases of a verdicts file, but those of `hidden`, with their figures.

    Raises:
        ProjectError: a line is not a graded attempt.
    """
    cases: dict[str, CaseEntry] = {}
    for offset, number, line in _lines(verdicts_path):
        try:
            graded = _graded(line)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ProjectError(f"{verdicts_path}: line {number}: not a graded attempt") from None
        if graded.split != "dev" or graded.case_id in hidden:
            continue
        entry = cases.get(graded.case_id)
        if entry is None:
            entry = cases[graded.case_id] = CaseEntry(graded.case_id, graded.suite)
        if graded.attempt in entry.verdict_at:
            continue
        entry.verdict_at[graded.attempt] = offset
        entry.attempts += 1
        entry.passed += graded.passed
        if graded.score is not None:
            entry.score_sum += graded.score
            entry.scored += 1
        for kind, status in graded.verdicts:
            entry.statuses.add((kind, status))
            if status in ("fail", "error"):
                entry.failing[kind] = entry.failing.get(kind, 0) + 1
    return cases


def _quietly(bring: Callable[[], object]) -> None:
    """Run `bring` in a prefetch thread: what fails is fetched, and reported, when read."""
    try:
        bring()
    except (ProjectError, OSError):
        return  # the page that reads it fetches it again and names the failure


def _evidence_texts(raw: Any) -> list[str]:
    """The questions, replies and cited ids of an evidence line, the variants' included."""
    texts: list[Any] = []
    for part in (raw, *(raw.get("variants") or ())):
        if isinstance(part, dict):
            for turn in part.get("turns") or ():
                if isinstance(turn, dict):
                    texts += [turn.get("input"), turn.get("reply"), *(turn.get("citations") or ())]
    if not raw.get("turns"):
        texts += [raw.get("reply"), *(raw.get("citations") or ())]
    return [_fold(text) for text in texts if isinstance(text, str)]


def _lines(path: Path, start: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """(byte offset, line number, line) of each non-blank line of `path` from byte `start`
    on (numbered from there), if it exists."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        lines.seek(start)
        offset = start
        for number, line in enumerate(lines, start=1):
            start, offset = offset, offset + len(line)
            if line.strip():
                yield start, number, line


def _read_at(path: Path, offsets: Sequence[int]) -> list[bytes]:
    with path.open("rb") as file:
        lines = []
        for offset in offsets:
            file.seek(offset)
            lines.append(file.readline())
        return lines
