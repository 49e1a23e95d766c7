"""What a case page shows of each attempt: the turns, the reply, its citations, the verdicts.

Replies are hostile text: they are kept as plain strings here and escaped by the templates,
never marked safe. A very long reply is cut for the page, with a note of how much is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from soev_pipeline.calibration import (
    Item,
    criterion_of,
    is_judged,
    label_choices,
    why_not_labelled,
)
from soev_pipeline.calibration.items import ItemKey
from soev_pipeline.calibration.queue import Unlabelled
from soev_pipeline.core.models import Case, Evidence, Failure, Turn, Verdict
from soev_pipeline.corpus import CorpusLookup
from soev_pipeline.criteria import CriterionRegistry
from soev_pipeline.run.results import GradedAttempt

from .i18n import term
from .translate import _

SHOWN_CHARS = 20_000
"""The longest reply, question or detail a page shows whole."""


@dataclass(frozen=True, slots=True)
class Text:
    """A text cut to `SHOWN_CHARS`, with how many characters were left out."""

    shown: str
    cut: int = 0

    @classmethod
    def of(cls, text: str | None) -> Text | None:
        if text is None:
            return None
        if len(text) <= SHOWN_CHARS:
            return cls(text)
        return cls(text[:SHOWN_CHARS], len(text) - SHOWN_CHARS)


@dataclass(frozen=True, slots=True)
class Citation:
    """A cited source id, and the corpus unit that holds its text (itself or its article)."""

    source: str
    unit: str | None


@dataclass(frozen=True, slots=True)
class TurnView:
    question: Text
    reply: Text | None
    citations: tuple[Citation, ...]
    tokens: str
    seconds: float
    failure: str | None


@dataclass(frozen=True, slots=True)
class VariantView:
    id: str
    turns: tuple[TurnView, ...]


@dataclass(frozen=True, slots=True)
class AttemptView:
    """One attempt: its figures, its turns (the last one holds the final reply)."""

    attempt: int
    passed: bool
    score: float | None
    turns: tuple[TurnView, ...]
    refusal_code: str | None
    failure: str | None
    variants: tuple[VariantView, ...]
    has_reply: bool
    """Whether the attempt has a final reply, which a human label quotes."""
    cause: str | None = None
    """Why the attempt has no reply (its first failure, else that it gave none): what took
    down the criteria that needed one. None when it has a reply or no evidence."""

    @property
    def reply(self) -> Text | None:
        return self.turns[-1].reply if self.turns else None


def unlabelled_words(code: Unlabelled) -> str:
    """Why a verdict takes no label, in the reader's language."""
    words = {
        "not_dev": _("the case is not a dev case of the project now: only dev cases are labelled"),
        "not_judged": _("this verdict is not the judge's: calibration measures only the judge"),
        "not_applicable": _(
            "the criterion does not apply to this case: calibration leaves such verdicts out"
        ),
        "needs_variants": _(
            "this criterion compares the replies of the variants, which a label does not hold"
        ),
        "no_reply": _("the attempt has no final reply to label"),
        "no_criterion": _("the case no longer has this criterion"),
    }
    return words[code]


@dataclass(frozen=True, slots=True)
class LabelSeen:
    """One person's label of an item, as a page shows it."""

    by: str
    passed: bool
    label: str | None
    at: datetime


def labels_seen(item: Item | None) -> tuple[LabelSeen, ...]:
    """The labels of `item`, one per person, oldest first."""
    if item is None:
        return ()
    seen = [
        LabelSeen(read.label.by, read.label.passed, read.label.label, read.label.at)
        for read in item.labels
    ]
    return tuple(sorted(seen, key=lambda label: label.at))


def disagree(item: Item | None) -> bool:
    """Whether people gave the item different verdicts."""
    return item is not None and len(set(item.verdicts)) > 1


@dataclass(frozen=True, slots=True)
class VerdictCell:
    """A verdict of one attempt; `choices` are the labels a human may give, if it takes
    one (`judged`: a label of it would count in calibration); else `unlabelled` says why
    not, for a verdict of the judge. `labels` are the people's labels of it so far."""

    attempt: int
    kind: str
    nth: int
    status: str
    detail: Text
    judge: str | None
    judged: bool
    choices: tuple[str, ...]
    unlabelled: str | None = None
    labels: tuple[LabelSeen, ...] = ()
    disagree: bool = False

    @property
    def anchor(self) -> str:
        """The id of the cell's label form on the case page."""
        return f"label-{self.attempt}-{self.kind}-{self.nth}"


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """A criterion of the case (kind and its index among the same kind) over the attempts."""

    kind: str
    nth: int
    weight: float
    gate: bool
    cells: tuple[VerdictCell | None, ...]

    @property
    def name(self) -> str:
        return self.kind if self.nth == 0 else f"{self.kind} #{self.nth}"

    @property
    def failed(self) -> bool:
        return any(cell is not None and cell.status in ("fail", "error") for cell in self.cells)


def unit_of(source: str, corpus: CorpusLookup | None) -> str | None:
    """The corpus unit that holds the text of `source`: the unit itself, else the nearest
    unit above it (a lid cites its article), else None."""
    if corpus is None:
        return None
    parts = source.split("/")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end])
        if candidate in corpus:
            return candidate
    return None


def failure_text(failure: Failure) -> str:
    """A failure in one line: its code, the HTTP status when there was one, its detail."""
    status = f" (HTTP {failure.http_status})" if failure.http_status is not None else ""
    return failure.code + status + (f": {failure.detail}" if failure.detail else "")


def _turn(turn: Turn, corpus: CorpusLookup | None) -> TurnView:
    usage = turn.usage
    tokens = "" if usage is None else f"{usage.prompt_tokens} + {usage.completion_tokens}"
    failure = None if turn.failure is None else failure_text(turn.failure)
    return TurnView(
        question=Text.of(turn.input) or Text(""),
        reply=Text.of(turn.reply),
        citations=tuple(Citation(source, unit_of(source, corpus)) for source in turn.citations),
        tokens=tokens,
        seconds=turn.duration_s,
        failure=failure,
    )


def attempt_view(
    graded: GradedAttempt, evidence: Evidence | None, corpus: CorpusLookup | None
) -> AttemptView:
    """The view of one attempt from its graded line and its evidence (None when its line
    in evidence.jsonl is gone or damaged: the page shows the verdicts alone)."""
    turns: tuple[TurnView, ...] = ()
    variants: tuple[VariantView, ...] = ()
    refusal = failure = cause = None
    has_reply = False
    if evidence is not None:
        turns = tuple(_turn(turn, corpus) for turn in evidence.turns)
        if not turns and evidence.reply is not None:
            turns = (
                TurnView(
                    Text(""),
                    Text.of(evidence.reply),
                    tuple(Citation(s, unit_of(s, corpus)) for s in evidence.citations),
                    "",
                    0.0,
                    None,
                ),
            )
        variants = tuple(
            VariantView(variant.id, tuple(_turn(turn, corpus) for turn in variant.turns))
            for variant in evidence.variants
        )
        refusal = evidence.refusal_code
        first = evidence.failure
        failure = None if first is None else first.code
        has_reply = evidence.reply is not None
        if not has_reply:
            cause = _("no reply") if first is None else failure_text(first)
    return AttemptView(
        attempt=graded.attempt,
        passed=graded.passed,
        score=graded.score,
        turns=turns,
        refusal_code=refusal,
        failure=failure,
        variants=variants,
        has_reply=has_reply,
        cause=cause,
    )


def _numbered(verdicts: Sequence[Verdict]) -> list[tuple[int, Verdict]]:
    seen: Counter[str] = Counter()
    numbered = []
    for verdict in verdicts:
        numbered.append((seen[verdict.kind], verdict))
        seen[verdict.kind] += 1
    return numbered


def verdict_rows(
    attempts: Sequence[GradedAttempt],
    case: Case | None,
    replies: Mapping[int, str],
    registry: CriterionRegistry | None = None,
    items: Mapping[ItemKey, Item] | None = None,
) -> list[VerdictRow]:
    """The verdicts of a case's attempts as rows, one per criterion, in the criteria's order.

    A judged verdict of an attempt with a final reply (`replies`: its SHA-256, by attempt)
    can take a label when calibration would count it (`calibration.why_not_labelled`);
    its `choices` are then the labels of its kind in `registry` (the project's kinds; the
    built-in ones when None), and `items` (the labelled items, by key) give the labels
    people gave it so far.
    """
    rows: dict[tuple[str, int], dict[int, VerdictCell]] = {}
    shape: dict[tuple[str, int], tuple[float, bool]] = {}
    for column, graded in enumerate(attempts):
        for nth, verdict in _numbered(graded.verdicts):
            key = (verdict.kind, nth)
            shape.setdefault(key, (verdict.weight, verdict.gate))
            sha = replies.get(graded.attempt)
            judge_kind = is_judged(verdict)
            why = why_not_labelled(
                case,
                verdict.kind,
                nth,
                verdict.status,
                judged=judge_kind,
                has_reply=sha is not None,
            )
            spec = criterion_of(case, verdict.kind, nth) if case is not None else None
            item = (items or {}).get((graded.case_id, sha, verdict.kind, nth)) if sha else None
            rows.setdefault(key, {})[column] = VerdictCell(
                attempt=graded.attempt,
                kind=verdict.kind,
                nth=nth,
                status=verdict.status,
                detail=Text.of(verdict.detail) or Text(""),
                judge=verdict.judge_model,
                judged=why is None,
                choices=label_choices(spec, registry) if why is None and spec is not None else (),
                unlabelled=unlabelled_words(why)
                if why is not None and judge_kind and why != "not_dev"
                else None,
                labels=labels_seen(item),
                disagree=disagree(item),
            )
    return [
        VerdictRow(
            kind=kind,
            nth=nth,
            weight=shape[(kind, nth)][0],
            gate=shape[(kind, nth)][1],
            cells=tuple(cells.get(column) for column in range(len(attempts))),
        )
        for (kind, nth), cells in rows.items()
    ]


def status_counts(row: VerdictRow) -> str:
    """The statuses of a row over its attempts, briefly: `pass ×2, fail ×1`."""
    counts = Counter(cell.status for cell in row.cells if cell is not None)
    order = ("fail", "error", "pass", "not_applicable")
    return ", ".join(f"{term(status)} ×{counts[status]}" for status in order if counts[status])


def status_shares(row: VerdictRow) -> dict[str, float]:
    """The share of the row's attempts with each status: rows of runs with different k
    compare equal when their attempts fared alike."""
    statuses = [cell.status for cell in row.cells if cell is not None]
    return {status: count / len(statuses) for status, count in Counter(statuses).items()}
