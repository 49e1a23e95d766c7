"""The labelling queue's page (`/label`, docs/view.md#the-labelling-queue), and the labels
so far of each judged verdict, for the queue and the case pages.

The rule that picks the next item is calibration's (`calibration.next_to_label`); this
module gives it the run's candidates and the project's labels. The candidates of a
scoring are read once (one pass over its verdicts, one over the evidence of its judged
attempts) and arranged in a `LabelQueue`, kept while the files do not change; the labels
are read again only when a label file changes. So the next item costs a walk over the
labels in memory, not a read of the run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from soev_pipeline.calibration import (
    JUDGED_KINDS,
    Candidate,
    Item,
    LabelQueue,
    Plan,
    Progress,
    criterion_of,
    label_choices,
    project_label_files,
    read_project_labels,
    why_not_labelled,
)
from soev_pipeline.calibration.items import ItemKey
from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.criteria.rubric import RubricParams
from soev_pipeline.criteria.watsonx import Criteria

from .attempts import AttemptView, LabelSeen, Text, attempt_view, labels_seen
from .index import RunIndex
from .store import NotFound, RunStore, signature

T = TypeVar("T")
SKIPS_KEPT = 50
"""The item ids a queue's address keeps as skipped: the last ones skipped."""


def label_items(store: RunStore) -> dict[ItemKey, Item]:
    """The project's labelled items by key, read again when a label file changes."""
    files = project_label_files(store.loaded)

    def build() -> dict[ItemKey, Item]:
        items = read_project_labels(store.loaded).items
        return {(i.case_id, i.labels[0].label.reply_sha256, i.kind, i.nth): i for i in items}

    return store.memo(("labels", store.loaded.directory), signature(*files), build)


def _lines_at(path: Path, wanted: Mapping[int, T]) -> Iterator[tuple[T, bytes]]:
    """(owner, line) of each line of `path` that starts at an offset of `wanted`."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        offset = 0
        for line in lines:
            owner = wanted.get(offset)
            offset += len(line)
            if owner is not None:
                yield owner, line


_JUDGED_MARKS = (b'"prompt_sha":"', *(f'"kind":"{kind}"'.encode() for kind in JUDGED_KINDS))
"""What a verdicts line holds when one of its verdicts may be the judge's: a line without
any is passed over undecoded (most lines of a run whose judged criteria are few)."""


def _judged(verdicts: list[dict[str, Any]]) -> Iterator[tuple[int, str, str]]:
    """(nth, kind, status) of each judged verdict among an attempt's `verdicts`."""
    seen: Counter[str] = Counter()
    for raw in verdicts:
        kind, status = str(raw.get("kind")), str(raw.get("status"))
        nth = seen[kind]
        seen[kind] += 1
        if kind in JUDGED_KINDS or raw.get("prompt_sha") is not None:
            yield nth, kind, status


def queue_of(store: RunStore, index: RunIndex) -> LabelQueue:
    """The judged verdicts of a scoring's dev cases that a label would count for
    (`calibration.why_not_labelled` says which do not), read and arranged once per scoring.

    The verdicts are read first, and then only the evidence of the attempts with a judged
    verdict, for the SHA-256 of their replies.
    """

    def build() -> LabelQueue:
        owners = {
            offset: (entry.case_id, attempt)
            for entry in index.cases.values()
            for attempt, offset in entry.verdict_at.items()
        }
        judged: dict[tuple[str, int], list[tuple[int, str, str]]] = {}
        for owner, line in _lines_at(index.verdicts_path, owners):
            if not any(mark in line for mark in _JUDGED_MARKS):
                continue
            try:
                found = list(_judged(json.loads(line)["verdicts"]))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            if found:
                judged[owner] = found
        wanted = {
            offset: (entry.case_id, attempt)
            for entry in index.cases.values()
            for attempt, offset in entry.evidence_at.items()
            if (entry.case_id, attempt) in judged
        }
        candidates: list[Candidate] = []
        for (case_id, attempt), line in _lines_at(index.evidence_path, wanted):
            try:
                reply = json.loads(line).get("reply")
            except (ValueError, AttributeError):
                continue
            case = store.dev_case(case_id)
            for nth, kind, status in judged[(case_id, attempt)]:
                has_reply = isinstance(reply, str)
                why = why_not_labelled(case, kind, nth, status, judged=True, has_reply=has_reply)
                if why is None and isinstance(reply, str):
                    sha = sha256_text(reply)
                    candidates.append(Candidate(case_id, attempt, sha, kind, nth, status == "pass"))
        return LabelQueue(candidates)

    files = signature(index.verdicts_path, index.evidence_path)
    return store.memo(("candidates", index.verdicts_path), files, build)


@dataclass(frozen=True)
class QueueItem:
    """The item the queue offers: the reply, what the criterion asks, the judge's verdict,
    and the labels people gave it so far."""

    case_id: str
    attempt: AttemptView
    questions: tuple[Text, ...]
    kind: str
    nth: int
    name: str
    summary: str
    behaviour: str
    rubric: Text | None
    choices: tuple[str, ...]
    status: str
    detail: Text
    judge: str | None
    labels: tuple[LabelSeen, ...]
    item_id: str


@dataclass(frozen=True)
class QueuePage:
    """The queue of one run for one reviewer: its plan and the item it offers."""

    run_id: str | None
    reviewer: str
    plan: Plan | None
    item: QueueItem | None
    progress: Progress | None
    skipped: tuple[str, ...]

    @property
    def skip_list(self) -> str:
        return ",".join(self.skipped)


def skipped_ids(text: str) -> tuple[str, ...]:
    """The item ids of a queue address's `skip` (comma-separated), the last `SKIPS_KEPT`."""
    ids = [part for part in text.split(",") if len(part) == 12 and part.isalnum()]
    return tuple(dict.fromkeys(ids))[-SKIPS_KEPT:]


def _newest_graded(store: RunStore) -> str | None:
    for summary in store.runs():
        if summary.archive.latest_report_path() is not None:
            return summary.run_id
    return None


def _rubric(store: RunStore, kind: str, params: Mapping[str, object]) -> Text | None:
    if kind != "rubric.judge":
        return None
    try:
        rubric = RubricParams.model_validate(params)
    except ValidationError:
        return None
    if rubric.rubric is not None:
        return Text.of(store.loaded.context.rubrics.get(rubric.rubric))
    if rubric.criterion is not None:
        return Text.of(described(rubric.criterion))
    return None


def described(criteria: Criteria) -> str:
    """A watsonx.gov-style criterion as a reviewer reads it: its question, then each option
    with its value and what it means, one a line (placeholders left as the judge sees them)."""
    lines = [f"{criteria.name}: {criteria.description}" if criteria.name else criteria.description]
    for option in criteria.options:
        value = "" if option.value is None else f" ({option.value:g})"
        meaning = f": {option.description}" if option.description else ""
        lines.append(f"- {option.name}{value}{meaning}")
    return "\n".join(lines)


def _item(store: RunStore, index: RunIndex, chosen: Candidate, plan: Plan) -> QueueItem:
    case = store.dev_case(chosen.case_id)
    spec = criterion_of(case, chosen.kind, chosen.nth) if case is not None else None
    if case is None or spec is None:
        raise NotFound("the item's case or criterion is gone from the project")
    graded = next(g for g in index.graded(chosen.case_id) if g.attempt == chosen.attempt)
    evidence = index.evidence(chosen.case_id).get(chosen.attempt)
    view = attempt_view(graded, evidence, store.corpus)
    verdict = [v for v in graded.verdicts if v.kind == chosen.kind][chosen.nth]
    questions = tuple(turn.question for turn in view.turns) or tuple(
        Text.of(turn) or Text("") for turn in case.turns
    )
    registry = store.loaded.registry
    summary = registry.get(chosen.kind).summary if chosen.kind in registry else ""
    return QueueItem(
        case_id=chosen.case_id,
        attempt=view,
        questions=questions,
        kind=chosen.kind,
        nth=chosen.nth,
        name=chosen.name,
        summary=summary,
        behaviour=case.behaviour,
        rubric=_rubric(store, chosen.kind, spec.params),
        choices=label_choices(spec, registry),
        status=verdict.status,
        detail=Text.of(verdict.detail) or Text(""),
        judge=verdict.judge_model,
        labels=labels_seen(plan.labels),
        item_id=chosen.item_id,
    )


def queue_page(
    store: RunStore, run_id: str | None, reviewer: str, skipped: tuple[str, ...] = ()
) -> QueuePage:
    """The next item of run `run_id` (else of the newest graded run) for `reviewer`.

    Raises:
        NotFound: no such run of the project.
    """
    run_id = run_id or _newest_graded(store)
    if run_id is None:
        return QueuePage(None, reviewer, None, None, None, skipped)
    archive, _ = store.archive(run_id)
    index = store.index(archive)
    if index is None:
        return QueuePage(archive.run_id, reviewer, None, None, None, skipped)
    items = label_items(store)
    plan = queue_of(store, index).plan(items.values(), reviewer, frozenset(skipped))
    chosen = plan.next
    item = None if chosen is None else _item(store, index, chosen, plan)
    progress = None if chosen is None else plan.progress.get(chosen.name)
    return QueuePage(archive.run_id, reviewer, plan, item, progress, skipped)
