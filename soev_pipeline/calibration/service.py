"""Calibrate the judge on the project's human labels, as one function
(docs/judge.md#soev-evals-calibrate).

`calibrate` reads the project's label files, grades every labelled item with the judge it
is given, and measures the judge against the people per judged criterion and overall; with
a run's judged rates it also corrects them for the judge's errors. The `calibrate` command,
the `report` command and the `judge_calibration` asset all come through here.
"""

from __future__ import annotations

import stat
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Case
from soev_pipeline.core.ports import Judge, ReportsStats
from soev_pipeline.judges import load_prompts, open_judge
from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import JUDGE_CACHE
from soev_pipeline.run.results import CalibratedRate
from soev_pipeline.runtime import open_runtime
from soev_pipeline.runtime.providers import BUILTIN

from .agreement import Confusion, agreement_of, human_agreement, label_confusion
from .corrected import Correction, JudgedRate, correct, judged_rate
from .items import Item, gather
from .judging import Graded, grade_items, why_ungradable
from .labels import LeftOut, label_files, read_labels
from .rates import RunRates
from .results import Calibration, ConfusionTable, CriterionFigures

DEFAULT_MIN_KAPPA = 0.6
"""The least κ a judge needs when the project sets no `judge.min_kappa`: below it, agreement
is "moderate" at best (Landis and Koch), too little to trust a judge's rates as they are."""
DEFAULT_MIN_ITEMS = 20
"""The fewest items on which `calibrate --min-kappa` accepts a criterion's κ: on fewer, a
handful of agreeing labels would pass the gate while proving nothing."""


@dataclass(frozen=True)
class Labelled:
    """The project's labels as they count now: the items, and the lines left out."""

    items: tuple[Item, ...]
    labels_read: int
    left_out: tuple[LeftOut, ...]


@dataclass(frozen=True)
class Judged:
    """The labelled items after the judge graded them.

    `people` holds every item that counts (the decided ones and the ties), `graded` the
    decided ones with the judge's verdict, `labels_read` the label lines that count, and
    `left_out` every line that counts nowhere: those `read_project_labels` left out, and
    the lines of items that cannot be graded now. `labelled` names the kinds among them
    whose judge gives one label per attempt (`Builtin.labelled`): their figures hold a
    label confusion.
    """

    people: tuple[Item, ...]
    graded: tuple[Graded, ...]
    labels_read: int
    left_out: tuple[LeftOut, ...]
    labelled: frozenset[str] = frozenset()


def project_label_files(loaded: LoadedProject) -> list[Path]:
    """The label files the project's `labels` glob names (by default `labels/*.jsonl`)."""
    return label_files(loaded.directory, loaded.project.labels)


def read_project_labels(loaded: LoadedProject) -> Labelled:
    """Read the project's label files against its cases; see `labels.read_labels`."""
    cases = {case.id: case for case in loaded.cases()}
    read = read_labels(project_label_files(loaded), cases, loaded.registry)
    return Labelled(tuple(gather(read.labels)), len(read.labels), read.left_out)


def _left_out(item: Item, why: str) -> list[LeftOut]:
    return [LeftOut(file=str(read.file), line=read.line, why=why) for read in item.labels]


async def judge_labels(
    loaded: LoadedProject,
    labelled: Labelled,
    judge: Judge | None,
    prompts: Mapping[str, str],
) -> Judged:
    """Grade every decided item of `labelled` with `judge`.

    `prompts` are the prompt texts the judge was built with, by task, for the digests of
    the figures (empty for a judge of a runtime provider: the verdicts then say).
    """
    cases: dict[str, Case] = {case.id: case for case in loaded.cases()}
    left_out = list(labelled.left_out)
    people: list[Item] = []
    decided: list[Item] = []
    for item in labelled.items:
        why = why_ungradable(item)
        if why is not None:
            left_out += _left_out(item, why)
            continue
        people.append(item)
        if item.passed is not None:
            decided.append(item)
    graded: list[Graded] = []
    not_applicable: set[int] = set()
    for item, result in zip(
        decided, await grade_items(loaded, decided, cases, judge, prompts), strict=True
    ):
        if isinstance(result, str):
            left_out += _left_out(item, result)
            not_applicable.add(id(item))
        else:
            graded.append(result)
    people = [item for item in people if id(item) not in not_applicable]
    moved = len(left_out) - len(labelled.left_out)
    kinds = {item.kind for item in people if item.kind in loaded.registry}
    with_labels = frozenset(kind for kind in kinds if loaded.registry.get(kind).labelled)
    return Judged(
        tuple(people), tuple(graded), labelled.labels_read - moved, tuple(left_out), with_labels
    )


def _figures(
    graded: Sequence[Graded],
    people: Sequence[Item],
    *,
    labels: bool,
    rate: JudgedRate | None,
) -> CriterionFigures:
    outcomes = [entry.outcome for entry in graded]
    found = agreement_of(outcomes)
    table = Confusion.of(outcomes)
    human, human_kappa = human_agreement(item.verdicts for item in people if len(item.labels) > 1)
    digests: dict[str, str] = {}
    for entry in graded:
        digests.update(entry.prompt_sha256)
    figures = CriterionFigures(
        items=found.items,
        ties=sum(1 for item in people if item.passed is None),
        agreement=found.agreement,
        judge_errors=found.judge_errors,
        pass_recall=found.pass_recall,
        pass_recall_ci95=found.pass_recall_ci95,
        fail_recall=found.fail_recall,
        fail_recall_ci95=found.fail_recall_ci95,
        kappa=found.kappa,
        kappa_ci95=found.kappa_ci95,
        confusion=ConfusionTable.of(table),
        labels=label_confusion(outcomes) if labels else None,
        human_agreement=human,
        human_kappa=human_kappa,
        prompt_sha256=dict(sorted(digests.items())),
    )
    if rate is None:
        return figures
    corrected = corrected_rate(table, rate)
    return figures.model_copy(
        update={
            "judge_pass_rate": rate.rate,
            "judged_attempts": rate.verdicts,
            "corrected_pass_rate": corrected.value,
            "corrected_ci95": corrected.interval,
            "clipped": corrected.clipped,
            "corrected_why": corrected.why,
        }
    )


def corrected_rate(table: Confusion, rate: JudgedRate) -> Correction:
    """The Rogan–Gladen corrected rate of `rate` for the judge of `table`, with its interval,
    or why there is none (`corrected.correct`)."""
    fail_hits = table.fail_fail + table.fail_error
    return correct(rate, table.pass_pass, table.human_pass, fail_hits, table.human_fail)


def calibration_of(
    judged: Judged,
    *,
    rates: RunRates | None = None,
    run_id: str | None = None,
    judge_stats: Mapping[str, object] | None = None,
) -> Calibration:
    """The figures of `judged`: per criterion (`kind`, or `kind#nth`), and `overall` over
    every item; with `rates` (a run's), each criterion's judged rate corrected too."""
    graded: dict[str, list[Graded]] = defaultdict(list)
    people: dict[str, list[Item]] = defaultdict(list)
    for entry in judged.graded:
        graded[entry.item.name].append(entry)
    for item in judged.people:
        people[item.name].append(item)
    criteria = {
        name: _figures(
            graded[name],
            people[name],
            labels=people[name][0].kind in judged.labelled,
            rate=rates.criterion(name) if rates is not None else None,
        )
        for name in sorted(people)
    }
    pooled = None
    if rates is not None:
        pooled = judged_rate(list(_pooled_cases(rates, criteria).values()))
    overall = _figures(judged.graded, judged.people, labels=False, rate=pooled)
    return Calibration(
        criteria=criteria,
        overall=overall,
        labels_read=judged.labels_read,
        left_out=judged.left_out,
        run_id=run_id,
        judge=dict(judge_stats) if judge_stats is not None else None,
    )


def _pooled_cases(rates: RunRates, names: Mapping[str, object]) -> dict[str, tuple[int, int]]:
    """The run's judged verdicts of the criteria `names`, added up per case."""
    pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name in names:
        for case_id, (passed, counted) in rates.by_criterion.get(name, {}).items():
            pooled[case_id][0] += passed
            pooled[case_id][1] += counted
    return {case_id: (passed, counted) for case_id, (passed, counted) in pooled.items()}


def calibrated_kinds(
    judged: Judged, rates: RunRates, run_prompts: Mapping[str, str]
) -> dict[str, CalibratedRate]:
    """Per kind (its criteria pooled, as a report counts them): the judge's figures on the
    labels, and the run's judged rate of that kind corrected for them.

    `prompts_match` says whether the run was graded with the prompts (and rubric files)
    that the labels measured: `run_prompts` are the digests its scoring records.
    """
    by_kind: dict[str, list[Graded]] = defaultdict(list)
    for entry in judged.graded:
        by_kind[entry.item.kind].append(entry)
    found: dict[str, CalibratedRate] = {}
    for kind, entries in sorted(by_kind.items()):
        outcomes = [entry.outcome for entry in entries]
        figures = agreement_of(outcomes)
        rate = rates.kind(kind)
        corrected = corrected_rate(Confusion.of(outcomes), rate)
        digests: dict[str, str] = {}
        for entry in entries:
            digests.update(entry.prompt_sha256)
        found[kind] = CalibratedRate(
            items=figures.items,
            judge_errors=figures.judge_errors,
            kappa=figures.kappa,
            pass_recall=figures.pass_recall,
            fail_recall=figures.fail_recall,
            judge_pass_rate=rate.rate,
            judged_attempts=rate.verdicts,
            corrected_pass_rate=corrected.value,
            corrected_ci95=corrected.interval,
            clipped=corrected.clipped,
            corrected_why=corrected.why,
            prompts_match=all(
                run_prompts.get(name) == sha
                for name, sha in digests.items()
                if not name.startswith("criterion:")
            ),
        )
    return found


@asynccontextmanager
async def calibration_judge(
    loaded: LoadedProject,
    state: Path,
    *,
    offline: bool = False,
    prompts_dir: Path | None = None,
) -> AsyncIterator[tuple[Judge | None, dict[str, str]]]:
    """The judge to calibrate, open for one command, with the prompt texts it grades with.

    The project's runtime provider gives it, as to a rescore (the built-in one: the
    `judge:` section, with the judge cache in `state`). With `prompts_dir` (or offline),
    it is the `judge:` section's judge over the built-in prompts with the files of
    `prompts_dir` in place of theirs.

    Raises:
        ProjectError: `prompts_dir` is not a folder of prompt files of known tasks, or it
            (or `offline`) is asked of a project without a `judge:` section.
        ArmError, JudgeError: the runtime provider could not open.
    """
    current = load_prompts()
    name = loaded.project.runtime
    if prompts_dir is None and not offline:
        async with open_runtime(loaded, name, "rescore", state) as bindings:
            yield bindings.judge, current if name in (None, BUILTIN) else {}
        return
    config = loaded.project.judge
    if config is None:
        raise ProjectError(
            f"{loaded.path}: judge: the project has no judge: section; "
            f"{'--prompts' if prompts_dir is not None else '--offline'} grades with its judge"
        )
    texts = {**current, **candidate_prompts(prompts_dir, current)} if prompts_dir else current
    async with open_judge(
        config, cache_path=state / JUDGE_CACHE, offline=offline, prompts=texts
    ) as judge:
        yield judge, texts


def candidate_prompts(folder: Path, current: Mapping[str, str]) -> dict[str, str]:
    """The prompt files of `folder` (`<task>.md`), which must name tasks the judge has.

    Raises:
        ProjectError: the folder is missing, holds no prompt file, a file names no known
            task (a typo would otherwise leave the old prompt in place unnoticed), or a file
            cannot be read, is not UTF-8 text, or is empty (the judge would be asked with
            no instructions, and the figures would compare nothing).
    """
    if not folder.is_dir():
        raise ProjectError(f"{folder}: --prompts: no such folder")
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.md")):
        task = path.name.removesuffix(".md")
        if task not in current:
            known = ", ".join(sorted(current))
            raise ProjectError(f"{path}: --prompts: {task!r} is not a judge task ({known})")
        found[task] = _prompt_text(path)
    if not found:
        raise ProjectError(f"{folder}: --prompts: the folder holds no <task>.md prompt file")
    return found


def _prompt_text(path: Path) -> str:
    """The text of a candidate prompt file, refused when it cannot serve as one."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ProjectError(f"{path}: --prompts: not a regular file")
        data = path.read_bytes()
    except OSError as exc:
        raise ProjectError(f"{path}: --prompts: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProjectError(f"{path}: --prompts: not UTF-8 text") from None
    if not text.strip():
        raise ProjectError(
            f"{path}: --prompts: the prompt is empty; write the judge's instructions"
        )
    return text


async def calibrate(
    loaded: LoadedProject,
    state: Path,
    *,
    offline: bool = False,
    prompts_dir: Path | None = None,
    rates: RunRates | None = None,
    run_id: str | None = None,
) -> tuple[Calibration, Judged]:
    """Calibrate the project's judge on its labels: open the judge, grade, measure.

    Raises:
        ProjectError, ArmError, JudgeError: see `calibration_judge`.
    """
    labelled = read_project_labels(loaded)
    async with calibration_judge(loaded, state, offline=offline, prompts_dir=prompts_dir) as (
        judge,
        prompts,
    ):
        if judge is None:
            raise ProjectError(
                f"{loaded.path}: judge: there is no judge to calibrate: the project has no "
                "judge: section, and its runtime provider gives none"
            )
        judged = await judge_labels(loaded, labelled, judge, prompts)
        stats = judge.stats_dict() if isinstance(judge, ReportsStats) else None
    return calibration_of(judged, rates=rates, run_id=run_id, judge_stats=stats), judged


def kappa_differences(current: Calibration, candidate: Calibration) -> dict[str, float | None]:
    """κ of the candidate prompts minus κ of the current ones, per criterion and overall."""
    pairs = {
        name: (figures, candidate.criteria.get(name)) for name, figures in current.criteria.items()
    }
    pairs["overall"] = (current.overall, candidate.overall)
    return {
        name: None
        if old.kappa is None or new is None or new.kappa is None
        else new.kappa - old.kappa
        for name, (old, new) in pairs.items()
    }
