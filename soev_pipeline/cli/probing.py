"""`soev-evals probe-judge` (docs/judge.md#is-the-judge-fooled-probes).

The parser part is imported with the command line, so it imports nothing heavy; the
project, the judge and the probes are imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import EXIT_GATE, EXIT_OK

if TYPE_CHECKING:
    from soev_pipeline.probes import ProbeFigures, Probing


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def add_probe_parser(
    commands: argparse._SubParsersAction[Any],
    add_project: Callable[[argparse.ArgumentParser], None],
    add_runs_dir: Callable[[argparse.ArgumentParser], None],
    run_id: Callable[[str], str],
    fraction: Callable[[str], float],
    positive: Callable[[str], int],
) -> None:
    """The `probe-judge` subcommand; `--project`, `--runs-dir` and the checks of a run id,
    a fraction and a positive count come from `main`, as every command's do."""
    probe = commands.add_parser(
        "probe-judge",
        help="probe the judge: the same reply padded, addressed to the grader, reordered",
        description="Grade judged items again with one controlled change each (padding, an "
        "instruction to the grader, another layout, options in another order, a reply that "
        "clearly fails) and count how often the judge's verdict moved.",
    )
    probe.add_argument(
        "--run",
        type=run_id,
        metavar="RUN",
        help="take dev attempts of this run (default: the latest run with a report)",
    )
    probe.add_argument(
        "--criteria", nargs="+", metavar="NAME", help="probe only these judged criteria"
    )
    probe.add_argument(
        "--items",
        type=positive,
        metavar="N",
        help="items per criterion, a seeded sample (default 20)",
    )
    probe.add_argument(
        "--seed", type=_seed, default=0, metavar="S", help="the seed of the sample and the probes"
    )
    probe.add_argument("--json", action="store_true", help="print the figures as JSON")
    probe.add_argument(
        "--max-flip",
        type=fraction,
        metavar="R",
        help="exit 3 when an invariance probe's flip rate is shown above R (the lower bound "
        "of its interval), or a sensitivity probe flips less often than 1 - R",
    )
    probe.add_argument("--offline", action="store_true", help="answer from the judge cache only")
    add_project(probe)
    add_runs_dir(probe)


def cmd_probe_judge(args: argparse.Namespace) -> int:
    """Probe the judge; print the figures; exit 3 when `--max-flip` fails."""
    from soev_pipeline.api import run_sync
    from soev_pipeline.probes import DEFAULT_ITEMS, DEFAULT_MAX_FLIP, probe_judge
    from soev_pipeline.project import load

    from .commands import _paths

    paths = _paths(args)
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    items = DEFAULT_ITEMS if args.items is None else int(args.items)
    probing = run_sync(
        probe_judge(
            loaded,
            paths.state,
            paths.runs,
            run_id=args.run,
            criteria=args.criteria,
            items=items,
            seed=args.seed,
            offline=args.offline,
        )
    )
    threshold = args.max_flip
    if threshold is None:
        threshold = loaded.project.probes.max_flip
    if threshold is None:
        threshold = DEFAULT_MAX_FLIP
    if args.json:
        sys.stdout.write(json.dumps(probing.report.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_probes(probing, threshold, items, args.seed))
    if args.max_flip is None:
        return EXIT_OK
    if not probing.report.probed:
        print(
            "soev-evals: judge probe gate failed: no item was probed, so nothing tested the judge",
            file=sys.stderr,
        )
        return EXIT_GATE
    failures = probing.report.gate_failures(args.max_flip)
    if failures:
        listed = "; ".join(f"{name}: {why}" for name, why in failures.items())
        print(
            f"soev-evals: judge probe gate failed: an invariance probe may flip at most "
            f"{args.max_flip:g} and a sensitivity probe must flip at least {1 - args.max_flip:g}; "
            f"{listed}",
            file=sys.stderr,
        )
        return EXIT_GATE
    return EXIT_OK


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _rate(figures: ProbeFigures) -> str:
    if figures.flip_rate is None or figures.flip_ci95 is None:
        return "—"
    low, high = figures.flip_ci95
    return f"{_percent(figures.flip_rate)} [{100 * low:.0f}–{100 * high:.0f}]"


def render_probes(probing: Probing, max_flip: float, items: int, seed: int) -> str:
    """The figures as one table, then a line per criterion: the biases shown, and whether
    the judge is sensitive."""
    from .render import _table

    report = probing.report
    sources = probing.sources
    taken = f"{sources.get('labels', 0)} labelled"
    if probing.run_id is not None:
        taken += f", {sources.get('run', 0)} of run {probing.run_id}"
    lines = [
        f"judge probes on {taken} (at most {items} per criterion, seed {seed}); the judge "
        f"was asked {_shown(report.judge_calls)} times, {_shown(report.cache_hits)} answers "
        "came from its cache",
        "",
    ]
    if not report.criteria:
        lines.append(
            "no judged item to probe: label replies (docs/judge.md#labels) or run the suites"
        )
        return "\n".join(lines) + "\n"
    rows = [
        {
            "criterion": name,
            "probe": probe,
            "kind": figures.kind,
            "items": figures.items,
            "flipped": figures.flipped,
            "to pass": figures.to_pass,
            "to fail": figures.to_fail,
            "flip rate [95% CI]": _rate(figures),
            "judge errors": figures.judge_errors,
        }
        for name, criterion in report.criteria.items()
        for probe, figures in criterion.probes.items()
    ]
    lines.append(_table(rows, list(rows[0]) if rows else ["criterion"]))
    lines.append("")
    for name, criterion in report.criteria.items():
        lines.append(f"{name}: {criterion.verdict_line(max_flip)}")
    return "\n".join(lines) + "\n"


def _shown(count: int | None) -> str:
    return "an unknown number of" if count is None else str(count)
