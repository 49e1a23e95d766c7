"""`soev-evals calibrate` and the corrected rates of `report RUN --json`
(docs/judge.md#soev-evals-calibrate).

The parser part is imported with the command line, so it imports nothing heavy; the
project, the judge and the figures are imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EXIT_GATE, EXIT_OK

if TYPE_CHECKING:
    from soev_pipeline.calibration import Calibration, CriterionFigures
    from soev_pipeline.project import LoadedProject, ProjectPaths
    from soev_pipeline.run.archive import RunArchive
    from soev_pipeline.run.results import Report

WIDE_KAPPA = 0.15
"""The half-width of κ's interval that `calibrate` suggests labelling enough items for."""


def _kappa(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [-1, 1], not {text}")
    return value


def _items(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def add_calibrate_parser(
    commands: argparse._SubParsersAction[Any],
    add_project: Callable[[argparse.ArgumentParser], None],
    add_runs_dir: Callable[[argparse.ArgumentParser], None],
    run_id: Callable[[str], str],
) -> None:
    """The `calibrate` subcommand; `--project`, `--runs-dir` and the run id's check come
    from `main`, as every command's do."""
    calibrate = commands.add_parser(
        "calibrate",
        help="measure the judge against the human labels; correct a run's judged rates",
        description="Grade every labelled item with the judge and prompts as they are now, "
        "and compare the judge with the people per judged criterion: agreement, recalls, "
        "Cohen's kappa. With --run, correct that run's judged pass rates for the judge's "
        "measured errors.",
    )
    calibrate.add_argument(
        "--run", type=run_id, metavar="RUN", help="also correct this run's judged pass rates"
    )
    calibrate.add_argument("--json", action="store_true", help="print the figures as JSON")
    calibrate.add_argument(
        "--min-kappa",
        type=_kappa,
        metavar="K",
        help="exit 3 when a criterion's kappa is below K, unknown, or measured on fewer than "
        "--min-items items (with --prompts: the candidate prompts' kappa)",
    )
    calibrate.add_argument(
        "--min-items",
        type=_items,
        metavar="N",
        help="the fewest items on which --min-kappa accepts a criterion's kappa (default 20)",
    )
    calibrate.add_argument(
        "--offline", action="store_true", help="answer from the judge cache only"
    )
    calibrate.add_argument(
        "--prompts",
        type=Path,
        metavar="DIR",
        help="also grade the labels with the prompt files of DIR (<task>.md) and show both "
        "side by side",
    )
    add_project(calibrate)
    add_runs_dir(calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Calibrate the judge on the labels; print the figures; exit 3 below `--min-kappa`."""
    from soev_pipeline.api import run_sync
    from soev_pipeline.calibration import calibrate, kappa_differences, run_rates
    from soev_pipeline.calibration.service import candidate_prompts
    from soev_pipeline.judges import load_prompts
    from soev_pipeline.project import load
    from soev_pipeline.run.archive import RunArchive
    from soev_pipeline.run.manifest import check_same_project
    from soev_pipeline.run.service import latest_scoring

    from .commands import _paths

    paths = _paths(args)
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    if args.prompts is not None:
        candidate_prompts(args.prompts, load_prompts())  # a wrong folder stops us before any work
    rates = None
    if args.run is not None:
        archive = RunArchive(paths.runs, args.run)
        check_same_project(archive.manifest(), loaded.project.name)
        rates = run_rates(archive, latest_scoring(archive))
    current, _ = run_sync(
        calibrate(loaded, paths.state, offline=args.offline, rates=rates, run_id=args.run)
    )
    candidate = None
    if args.prompts is not None:  # the run was graded with the current prompts: no rates
        candidate, _ = run_sync(
            calibrate(loaded, paths.state, offline=args.offline, prompts_dir=args.prompts)
        )
    threshold = _threshold(args, loaded)
    if args.json:
        data = current.to_json()
        if candidate is not None:
            data["candidate"] = {"prompts": str(args.prompts), **candidate.to_json()}
            data["kappa_difference"] = kappa_differences(current, candidate)
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_calibration(current, threshold, loaded.directory, _min_items(args)))
        if candidate is not None:
            sys.stdout.write(
                "\n" + render_prompts(current, candidate, args.prompts, threshold, _min_items(args))
            )
    gated = candidate if candidate is not None else current
    if args.min_kappa is not None:
        if not gated.criteria:
            print(
                "soev-evals: judge gate failed: no labelled item counts, so nothing measured "
                "the judge",
                file=sys.stderr,
            )
            return EXIT_GATE
        failures = gated.gate_failures(args.min_kappa, _min_items(args))
        if failures:
            which = f" with the prompts of {args.prompts}" if candidate is not None else ""
            listed = "; ".join(f"{name}: {why}" for name, why in failures.items())
            print(
                f"soev-evals: judge gate failed{which}: kappa must be at least "
                f"{args.min_kappa:g} on at least {_min_items(args)} items; {listed}",
                file=sys.stderr,
            )
            return EXIT_GATE
    return EXIT_OK


def _min_items(args: argparse.Namespace) -> int:
    from soev_pipeline.calibration import DEFAULT_MIN_ITEMS

    return DEFAULT_MIN_ITEMS if args.min_items is None else int(args.min_items)


def _threshold(args: argparse.Namespace, loaded: LoadedProject) -> float:
    from soev_pipeline.calibration import DEFAULT_MIN_KAPPA

    if args.min_kappa is not None:
        return float(args.min_kappa)
    judge = loaded.project.judge
    if judge is not None and judge.min_kappa is not None:
        return judge.min_kappa
    return DEFAULT_MIN_KAPPA


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _share(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "—"
    shown = _percent(value)
    if interval is not None:
        shown += f" [{100 * interval[0]:.0f}–{100 * interval[1]:.0f}]"
    return shown


def _kappa_text(figures: CriterionFigures) -> str:
    if figures.kappa is None:
        return "—"
    shown = f"{figures.kappa:.2f}"
    if figures.kappa_ci95 is not None:
        shown += f" [{figures.kappa_ci95[0]:.2f}, {figures.kappa_ci95[1]:.2f}]"
    return shown


def _people(figures: CriterionFigures) -> str:
    if figures.human_agreement is None:
        return "—"
    kappa = "—" if figures.human_kappa is None else f"{figures.human_kappa:.2f}"
    return f"{_percent(figures.human_agreement)}, κ {kappa}"


def _rows(calibration: Calibration) -> list[tuple[str, CriterionFigures]]:
    return [*calibration.criteria.items(), ("overall", calibration.overall)]


def _table(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> str:
    from .render import _table as table

    return table(rows, columns)


def render_calibration(
    calibration: Calibration, threshold: float, project_dir: Path, min_items: int
) -> str:
    """The figures as one table, a table of the corrected rates with a run, and in words
    what the figures say: a κ below `threshold`, fewer items than `min_items`, an interval
    too wide to tell, errors, a corrected rate that is missing or clipped, the label lines
    left out."""
    judge = calibration.judge or {}
    asked = ""
    if judge:
        asked = (
            f"; the judge answered {judge.get('requests', 0)} requests: "
            f"{judge.get('cache_hits', 0)} from its cache, {judge.get('calls', 0)} asked"
        )
    lines = [
        f"judge calibration on {calibration.labels_read} labels "
        f"({len(calibration.left_out)} lines left out){asked}",
        "",
    ]
    if not calibration.criteria:
        lines.append("no labelled item counts: see docs/judge.md for how to label replies")
    else:
        columns = ["criterion", "items", "agree", "pass recall", "fail recall", "κ [95% CI]"]
        columns += ["judge errors", "people agree"]
        rows = [
            {
                "criterion": name,
                "items": figures.items,
                "agree": _percent(figures.agreement),
                "pass recall": _share(figures.pass_recall, figures.pass_recall_ci95),
                "fail recall": _share(figures.fail_recall, figures.fail_recall_ci95),
                "κ [95% CI]": _kappa_text(figures),
                "judge errors": figures.judge_errors,
                "people agree": _people(figures),
            }
            for name, figures in _rows(calibration)
        ]
        lines.append(_table(rows, columns))
    if calibration.run_id is not None and calibration.criteria:
        lines += ["", f"run {calibration.run_id}: judged pass rates corrected for the judge"]
        columns = ["criterion", "verdicts", "judge pass rate", "corrected [95% CI]"]
        rows = [
            {
                "criterion": name,
                "verdicts": figures.judged_attempts or 0,
                "judge pass rate": _percent(figures.judge_pass_rate),
                "corrected [95% CI]": _corrected(figures),
            }
            for name, figures in _rows(calibration)
        ]
        lines.append(_table(rows, columns))
    notes = _notes(calibration, threshold, project_dir, min_items)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def _corrected(figures: CriterionFigures) -> str:
    shown = _share(figures.corrected_pass_rate, figures.corrected_ci95)
    return f"{shown} clipped" if figures.clipped else shown


def _notes(
    calibration: Calibration, threshold: float, project_dir: Path, min_items: int
) -> list[str]:
    """What the figures say, in words, one line each."""
    notes: list[str] = []
    for name, figures in calibration.criteria.items():
        notes += [f"{name}: {text}" for text in criterion_notes(figures, threshold, min_items)]
        if calibration.run_id is not None:
            notes += [f"{name}: {text}" for text in correction_notes(figures)]
    for left in calibration.left_out:
        notes.append(f"left out: {_shown(Path(left.file), project_dir)}:{left.line}: {left.why}")
    return notes


def criterion_notes(figures: CriterionFigures, threshold: float, min_items: int) -> list[str]:
    """Sentences about one criterion's figures: fewer items than a gate accepts, κ below
    the threshold, an interval too wide to tell, a κ that cannot be measured, judge
    errors, ties."""
    from soev_pipeline.calibration.agreement import NARROW_RECALL, WIDE_RECALL, items_for

    notes: list[str] = []
    confusion = figures.confusion
    people_passed = sum(confusion.human_pass.model_dump().values())
    if 0 < figures.items < min_items:
        notes.append(
            f"{_count(figures.items, 'item')}, fewer than the {min_items} on which "
            "--min-kappa accepts κ: so few labels prove little"
        )
    if figures.items == 0:
        notes.append("no item that a majority of people decided; κ cannot be measured")
    elif people_passed in (0, figures.items):
        said = "passed" if people_passed else "failed"
        notes.append(
            f"the people {said} every item: label items of both kinds to measure both recalls"
        )
    if figures.items and figures.kappa is None:
        notes.append("the people and the judge gave every item one verdict: κ cannot be measured")
    elif figures.kappa is not None and figures.kappa_ci95 is not None:
        low, high = figures.kappa_ci95
        if high < threshold:
            notes.append(
                f"κ {figures.kappa:.2f} is below {threshold:g}: the judge does not agree with "
                "the people well enough to trust its rates as they are"
            )
        elif low < threshold:
            half = (high - low) / 2
            needed = max(figures.items + 1, round(figures.items * (half / WIDE_KAPPA) ** 2))
            below = "below" if figures.kappa < threshold else "at or above"
            notes.append(
                f"κ {figures.kappa:.2f} is {below} {threshold:g}, but its interval "
                f"[{low:.2f}, {high:.2f}] is too wide to tell; about {needed} items would "
                f"narrow it to ±{WIDE_KAPPA:g}"
            )
    wide = [
        (name, _share(value, interval), items_for(value, NARROW_RECALL), people)
        for name, value, interval, people in (
            ("pass recall", figures.pass_recall, figures.pass_recall_ci95, "passed"),
            ("fail recall", figures.fail_recall, figures.fail_recall_ci95, "failed"),
        )
        if value is not None and interval is not None and interval[1] - interval[0] > WIDE_RECALL
    ]
    if wide:
        shown = " and ".join(f"{name} {value}" for name, value, _, _ in wide)
        counts = " and ".join(f"{count} that people {people}" for _, _, count, people in wide)
        notes.append(
            f"{shown} {'is' if len(wide) == 1 else 'are'} too wide to tell; about {counts} "
            f"would narrow {'it' if len(wide) == 1 else 'them'} to ±{100 * NARROW_RECALL:.0f} "
            "points"
        )
    if figures.judge_errors:
        errors = _count(figures.judge_errors, "judge error")
        notes.append(f"{errors}, each counted as the judge's fail")
    if figures.ties:
        ties = _count(figures.ties, "item")
        notes.append(f"{ties} on which the people split evenly, left out against the judge")
    return notes


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def correction_notes(figures: CriterionFigures) -> list[str]:
    """Sentences about a criterion's corrected rate: why there is none, or that it was
    clipped to 0 or 1 (the judged rate lies outside what the judge's recalls allow)."""
    if figures.corrected_pass_rate is None:
        return [f"no corrected rate: {figures.corrected_why or 'nothing to correct'}"]
    if not figures.clipped:
        return []
    if figures.corrected_pass_rate == 0.0:
        return [
            "the corrected rate is clipped to 0 %: the judge passed fewer verdicts than its "
            "false passes on the labels (1 − fail recall) alone would give"
        ]
    return [
        "the corrected rate is clipped to 100 %: the judge passed a larger share of "
        "verdicts than its pass recall, the share it passes of replies people pass"
    ]


def _shown(path: Path, project_dir: Path) -> str:
    try:
        return str(path.relative_to(project_dir))
    except ValueError:
        return str(path)


def render_prompts(
    current: Calibration, candidate: Calibration, folder: Path, threshold: float, min_items: int
) -> str:
    """The current prompts against the candidate prompts of `folder`, side by side."""
    from soev_pipeline.calibration import kappa_differences

    differences = kappa_differences(current, candidate)
    rows = []
    for name, figures in _rows(current):
        other = candidate.overall if name == "overall" else candidate.criteria.get(name)
        change = differences.get(name)
        rows.append(
            {
                "criterion": name,
                "items": figures.items,
                "κ now": "—" if figures.kappa is None else f"{figures.kappa:.2f}",
                "κ with DIR": "—" if other is None or other.kappa is None else f"{other.kappa:.2f}",
                "Δκ": "—" if change is None else f"{change:+.2f}",
                "agree now → with DIR": f"{_percent(figures.agreement)} → "
                f"{_percent(other.agreement if other else None)}",
            }
        )
    columns = ["criterion", "items", "κ now", "κ with DIR", "Δκ", "agree now → with DIR"]
    lines = [f"the prompts now against those of {folder} (DIR), on the same labels", ""]
    lines.append(_table(rows, columns))
    notes = [
        f"with DIR, {name}: {text}"
        for name, figures in candidate.criteria.items()
        for text in criterion_notes(figures, threshold, min_items)
    ]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def calibrated_report(paths: ProjectPaths, archive: RunArchive, report: Report) -> Report:
    """`report` with `criteria.<kind>.calibrated` for each labelled judged kind, when the
    project has labels; the report as it is otherwise.

    The judge grades the labelled items as `calibrate` does (from its cache when
    `calibrate` ran before), and the rates are those of the report's scoring.
    """
    from soev_pipeline.api import run_sync
    from soev_pipeline.calibration import (
        Judged,
        calibrated_kinds,
        calibration_judge,
        judge_labels,
        label_files,
        read_project_labels,
        run_rates,
    )
    from soev_pipeline.project import load, read_project

    project = read_project(paths.project_file)
    if not label_files(paths.directory, project.labels):
        return report
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    labelled = read_project_labels(loaded)
    if not labelled.items:
        return report
    report_path = archive.latest_report_path()
    if report_path is None:
        return report

    async def judged() -> Judged | None:
        async with calibration_judge(loaded, paths.state) as (judge, prompts):
            if judge is None:
                return None
            return await judge_labels(loaded, labelled, judge, prompts)

    graded = run_sync(judged())
    if graded is None:
        return report
    found = calibrated_kinds(graded, run_rates(archive, report_path.parent), report.prompts)
    criteria = {
        kind: counts.model_copy(update={"calibrated": found[kind]}) if kind in found else counts
        for kind, counts in report.criteria.items()
    }
    return report.model_copy(update={"criteria": criteria})
