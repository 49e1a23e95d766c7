"""The page builders of the judge probes: the last probing's table per criterion, and one
probed item with its reply before and after the probe.

The probes page answers: is the judge moved by what should not move it (padding, a note to
the grader, layout, the order of the options), and is it moved by a reply that clearly
fails? An item page answers: what exactly changed, and how did the verdict and its reason
move? Both read the probing `probe-judge` saved (`soev_pipeline.probes.saved`); a page view
never asks the judge. Items of a case that is not a dev case now are never shown.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from soev_pipeline.core.models import Verdict
from soev_pipeline.probes import (
    DEFAULT_MAX_FLIP,
    PROBES,
    CriterionProbes,
    ProbeFigures,
    SavedProbing,
    SavedTrial,
)

from .attempts import SHOWN_CHARS, Text
from .i18n import N_
from .store import NotFound, RunStore
from .translate import _

ITEMS_LISTED = 100
"""The items each list of a criterion shows; the rest are counted."""
SUMMARIES = {probe.name: probe.summary.replace("`", "") for probe in PROBES}
"""What each probe changes, as `probe-judge` says it."""
SUMMARIES_SHOWN = {
    "verbosity": N_(
        "the reply, then a restated question (not for privacy.names) and a courteous closing"
        " paragraph"
    ),
    "injection": N_(
        "the reply, then a sentence to the grader claiming it is incorrect (when the judge"
        " passed it) or correct (when it failed it)"
    ),
    "format": N_(
        "the reply's sentences as a list, as paragraphs, or in one paragraph with the first in bold"
    ),
    "option_order": N_(
        "rubric.judge only: the criterion's options (or the rubric's labels) in reverse order"
    ),
    "counterfactual": N_(
        "a reply that fails: a refusal where the case must be answered, an answer where it"
        " must be refused or abstained from, an unrelated paragraph for nuggets and variants,"
        " a personal name added for privacy.names"
    ),
}
"""The same, to translate; a test keeps them equal to `SUMMARIES` in English, and a probe
added later shows its own summary."""


def summary(probe: str) -> str:
    """What `probe` changes, in the page's language."""
    shown = SUMMARIES_SHOWN.get(probe)
    return _(shown) if shown is not None else SUMMARIES.get(probe, "")


_TOKENS = re.compile(r"\s+|\S+")


@dataclass(frozen=True, slots=True)
class ProbeRow:
    """One probe of one criterion, formatted; `alarm` when it shows a bias or a judge that
    is not sensitive."""

    probe: str
    kind: str
    items: int
    flipped: int
    rate: str
    to_pass: int
    to_fail: int
    judge_errors: int
    alarm: bool


@dataclass(frozen=True, slots=True)
class ItemRow:
    """A probed item in a criterion's list: its probe, case, and both statuses."""

    id: str
    probe: str
    case_id: str
    source: str
    before: str
    after: str


@dataclass(frozen=True)
class CriterionView:
    """A criterion's probes: the table, the line under it, the items whose verdict moved
    under an invariance probe, and those a failing reply did not move."""

    name: str
    rows: tuple[ProbeRow, ...]
    line: str
    moved: tuple[ItemRow, ...]
    moved_more: int
    unmoved: tuple[ItemRow, ...]
    unmoved_more: int


@dataclass(frozen=True)
class ProbesPage:
    """The last probing, or (`probed` False) the command that makes one."""

    probed: bool
    command: str
    facts: tuple[tuple[str, str], ...] = ()
    stale: bool = False
    max_flip: float = DEFAULT_MAX_FLIP
    criteria: tuple[CriterionView, ...] = ()


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of a reply's text; `changed` when the probe added, removed or replaced it."""

    text: str
    changed: bool = False


@dataclass(frozen=True)
class Side:
    """One side of an item: the verdict, the options offered, the reply in pieces (the
    probed side's changes marked)."""

    verdict: Verdict | None
    options: tuple[str, ...] | None
    pieces: tuple[Piece, ...]
    cut: int


@dataclass(frozen=True)
class ItemPage:
    """One probed item: what the probe changed, the question, and both sides."""

    id: str
    criterion: str
    probe: str
    kind: str
    summary: str
    case_id: str
    source: str
    run_id: str | None
    attempt: int | None
    case_in_run: bool
    questions: tuple[Text, ...]
    before: Side
    after: Side
    moved: bool
    same_reply: bool


def command(store: RunStore) -> str:
    """The `probe-judge` command that probes this viewer's project into its state."""
    parts = ["soev-evals probe-judge", "--project", str(store.loaded.path)]
    if store.runs_dir != store.loaded.directory / "runs":
        parts += ["--runs-dir", str(store.runs_dir)]
    return " ".join(parts)


def max_flip(store: RunStore) -> float:
    """The flip rate a bias must be shown above: the project's `probes.max_flip`, else 5 %."""
    configured = store.loaded.project.probes.max_flip
    return DEFAULT_MAX_FLIP if configured is None else configured


def _rate(figures: ProbeFigures) -> str:
    if figures.flip_rate is None or figures.flip_ci95 is None:
        return "–"
    low, high = figures.flip_ci95
    return f"{100 * figures.flip_rate:.0f} % [{100 * low:.0f}–{100 * high:.0f}]"


def _whole(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def verdict_line(probes: CriterionProbes, limit: float) -> str:
    """What the probes say of a criterion, in one line and the page's language: the
    biases shown above `limit`, and how sensitive the judge is. The same findings as
    `CriterionProbes.verdict_line` (probe-judge's line, in English), worded for the page."""
    biases = probes.biases(limit)
    if biases:
        flip = _("{probe} (at least {share} of items flip)")
        shown = ", ".join(
            flip.format(probe=name, share=_whole(probes.probes[name].lower)) for name in biases
        )
        said = _("bias shown: {probes}").format(probes=shown)
    else:
        said = _("no bias shown above {limit}").format(limit=_whole(limit))
    sensitivity = probes.probes.get("counterfactual")
    if sensitivity is None:
        found = _("sensitivity not probed (no failing reply is known for this kind)")
    elif sensitivity.flip_rate is None:
        found = _("sensitivity not measured (the judge passed no probed item)")
    elif sensitivity.flipped == 0:
        found = _("not sensitive at all: a failing reply flipped none of {items}")
    elif sensitivity.flip_rate < 1 - limit:
        found = _("partly sensitive: a failing reply flipped only {flipped} of {items}")
    else:
        found = _("sensitive: a failing reply flipped {flipped} of {items}")
    if sensitivity is not None:
        found = found.format(flipped=sensitivity.flipped, items=sensitivity.items)
    return f"{said}; {found}"


def _shown(store: RunStore, trials: tuple[SavedTrial, ...]) -> list[SavedTrial]:
    """The trials of cases that are dev cases now (a test case is never probed, but a case
    may have moved to the test split since)."""
    return [trial for trial in trials if store.dev_case(trial.case_id) is not None]


def _row(trial: SavedTrial) -> ItemRow:
    before, after = trial.statuses
    return ItemRow(trial.id, trial.probe, trial.case_id, trial.source, before, after)


def _criterion(
    name: str, probes: CriterionProbes, trials: list[SavedTrial], limit: float
) -> CriterionView:
    alarms = set(probes.biases(limit)) | set(probes.insensitive(limit))
    mine = [trial for trial in trials if trial.criterion == name]
    moved = [t for t in mine if t.kind == "invariance" and t.direction is not None]
    unmoved = [
        t
        for t in mine
        if t.kind == "sensitivity" and t.direction is None and "error" not in t.statuses
    ]
    rows = tuple(
        ProbeRow(
            probe,
            f.kind,
            f.items,
            f.flipped,
            _rate(f),
            f.to_pass,
            f.to_fail,
            f.judge_errors,
            probe in alarms,
        )
        for probe, f in probes.probes.items()
    )
    return CriterionView(
        name=name,
        rows=rows,
        line=verdict_line(probes, limit),
        moved=tuple(_row(t) for t in moved[:ITEMS_LISTED]),
        moved_more=max(0, len(moved) - ITEMS_LISTED),
        unmoved=tuple(_row(t) for t in unmoved[:ITEMS_LISTED]),
        unmoved_more=max(0, len(unmoved) - ITEMS_LISTED),
    )


def _facts(saved: SavedProbing, limit: float) -> tuple[tuple[str, str], ...]:
    taken = _("{n} from labels").format(n=saved.sources.get("labels", 0))
    if saved.run_id is not None:
        taken += ", " + _("{n} from run {run}").format(
            n=saved.sources.get("run", 0), run=saved.run_id
        )
    report = saved.report
    asked = _("asked {calls} times, {hits} answers from its cache").format(
        calls=_count(report.judge_calls), hits=_count(report.cache_hits)
    )
    items = _("{taken}; at most {items} per criterion, seed {seed}")
    every = _("every judged criterion")
    offline = " (" + _("offline: the cache only") + ")" if saved.offline else ""
    return (
        (_("probed"), saved.probed_at.strftime("%Y-%m-%d %H:%M UTC")),
        (_("items"), items.format(taken=taken, items=saved.items, seed=saved.seed)),
        (_("criteria"), ", ".join(saved.criteria) if saved.criteria else every),
        (_("the judge"), asked + offline),
        (
            _("a bias is shown"),
            _("when a flip rate's interval lies above {limit} %").format(limit=f"{100 * limit:g}"),
        ),
    )


def probes_page(store: RunStore) -> ProbesPage:
    """The last probing of the project, per criterion.

    Raises:
        ProjectError: the saved probing does not read.
    """
    saved = store.probing()
    if saved is None:
        return ProbesPage(probed=False, command=command(store))
    limit = max_flip(store)
    trials = _shown(store, saved.trials)
    return ProbesPage(
        probed=True,
        command=command(store),
        facts=_facts(saved, limit),
        stale=saved.prompts_version != store.loaded.prompts_version,
        max_flip=limit,
        criteria=tuple(
            _criterion(name, probes, trials, limit)
            for name, probes in saved.report.criteria.items()
        ),
    )


def _count(value: int | None) -> str:
    return _("an unknown number of") if value is None else str(value)


def changes(before: str, after: str) -> tuple[Piece, ...]:
    """`after` in pieces, word by word, with what the probe added or replaced in `before`
    marked changed. Whitespace alone is never marked: a new layout shows as itself."""
    first, second = _TOKENS.findall(before), _TOKENS.findall(after)
    matcher = difflib.SequenceMatcher(None, first, second, autojunk=False)
    pieces: list[Piece] = []
    for op, _i1, _i2, start, end in matcher.get_opcodes():
        _extend(pieces, second[start:end], op != "equal")
    return tuple(pieces)


def _extend(pieces: list[Piece], tokens: list[str], changed: bool) -> None:
    text = "".join(tokens)
    core = text.strip()
    if not changed or not core:
        _add(pieces, Piece(text))
        return
    start = text.index(core)
    _add(pieces, Piece(text[:start]))
    _add(pieces, Piece(core, True))
    _add(pieces, Piece(text[start + len(core) :]))


def _add(pieces: list[Piece], piece: Piece) -> None:
    if not piece.text:
        return
    if pieces and pieces[-1].changed == piece.changed:
        pieces[-1] = Piece(pieces[-1].text + piece.text, piece.changed)
    else:
        pieces.append(piece)


def _cut(text: str) -> tuple[str, int]:
    return text[:SHOWN_CHARS], max(0, len(text) - SHOWN_CHARS)


def item_page(store: RunStore, trial_id: str) -> ItemPage:
    """One probed item of the last probing.

    Raises:
        NotFound: no probing, no such item, or an item of a case that is not a dev case now.
        ProjectError: the saved probing does not read.
    """
    saved = store.probing()
    if saved is None:
        raise NotFound(_("the judge has not been probed yet"))
    trial = next((t for t in _shown(store, saved.trials) if t.id == trial_id), None)
    case = store.dev_case(trial.case_id) if trial is not None else None
    if trial is None or case is None:
        raise NotFound(_("no such probed item in the last probing"))
    before, before_cut = _cut(trial.reply)
    after, after_cut = _cut(trial.probed_reply)
    questions = tuple(text for text in map(Text.of, case.turns) if text is not None)
    return ItemPage(
        id=trial.id,
        criterion=trial.criterion,
        probe=trial.probe,
        kind=trial.kind,
        summary=summary(trial.probe),
        case_id=trial.case_id,
        source=trial.source,
        run_id=saved.run_id,
        attempt=trial.attempt,
        case_in_run=_in_run(store, saved.run_id, trial.case_id),
        questions=questions,
        before=Side(trial.original, trial.options, (Piece(before),), before_cut),
        after=Side(trial.probed, trial.probed_options, changes(before, after), after_cut),
        moved=trial.direction is not None,
        same_reply=trial.reply == trial.probed_reply,
    )


def _in_run(store: RunStore, run_id: str | None, case_id: str) -> bool:
    """Whether the run has a graded attempt of the case, so its case page answers."""
    if run_id is None:
        return False
    index = store.index_of(run_id)
    return index is not None and bool(index.graded(case_id))
