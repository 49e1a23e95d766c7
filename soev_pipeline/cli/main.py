"""The `soev-evals` command: run, report, rescore, seal (docs/runs.md#the-command-line)."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from soev_pipeline import __version__
from soev_pipeline.core.chars import printable
from soev_pipeline.core.explain import unwrap
from soev_pipeline.core.secrets import redact

from .calibrating import add_calibrate_parser
from .errors import EXIT_ERROR, EXIT_USAGE, describe_error, interrupted
from .exporting import add_export_parser
from .probing import add_probe_parser
from .signals import forward_to_interrupt, interruption_name, interruption_status
from .viewing import add_lang, add_view_parser, port

COLLECTOR_THRESHOLDS = (10_000, 20, 20)
"""The cyclic garbage collector's thresholds for the command's process (Python's: 700, 10,
10). See `run`."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit with status 2 and one line of reason."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _fraction(low_open: bool, high_open: bool) -> Callable[[str], float]:
    """An argparse type for a number in an interval: (0, 1) for alpha, [0, 1] for a rate."""
    shown = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        below = value <= 0 if low_open else value < 0
        above = value >= 1 if high_open else value > 1
        if below or above or value != value:
            raise argparse.ArgumentTypeError(f"must lie in {shown}, not {text}")
        return value

    return parse


def _run_id(text: str) -> str:
    """A run id is a Dagster partition key: `[a-z0-9][a-z0-9._-]*`."""
    from soev_pipeline.core.errors import ProjectError
    from soev_pipeline.run.archive import check_run_id

    try:
        return check_run_id(text)
    except ProjectError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _baseline(text: str) -> str:
    return text if text == "previous" else _run_id(text)


def _add_project(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project",
        type=Path,
        default=Path("project.yaml"),
        metavar="PATH",
        help="the project file (default: ./project.yaml)",
    )


def _runs_dir(text: str) -> Path | str:
    """A folder, or an object-store URL kept as it is (a path would fold its `//`)."""
    from soev_pipeline.core.errors import ProjectError
    from soev_pipeline.project.paths import is_object_url

    try:
        return text if is_object_url(text) else Path(text)
    except ProjectError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_runs_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs-dir",
        type=_runs_dir,
        metavar="DIR",
        help="where runs are archived: a folder, or s3://bucket/prefix (default: runs/ "
        "beside project.yaml)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="soev-evals",
        description="Evaluate a chat assistant that answers questions about Dutch law.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"soev-evals {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run the cases and archive their evidence")
    _add_project(run)
    run.add_argument(
        "--suite", action="append", default=[], metavar="NAME", help="a suite (repeatable)"
    )
    run.add_argument("--split", choices=("dev", "test"), help="one split (default: both)")
    run.add_argument("--k", type=_positive, default=1, metavar="N", help="attempts per case")
    which = run.add_mutually_exclusive_group()
    which.add_argument(
        "--resume", type=_run_id, metavar="RUN_ID", help="run the missing attempts of a run"
    )
    which.add_argument("--run-id", type=_run_id, metavar="NAME", help="the id of the new run")
    run.add_argument("--runtime", metavar="NAME", help="a runtime provider entry point")
    run.add_argument(
        "--no-retry-unrun",
        dest="retry_unrun",
        action="store_false",
        default=None,
        help="do not run the attempts that did not run once more before grading (default: "
        "the project's system.retry_unrun, true)",
    )
    _add_runs_dir(run)

    report = commands.add_parser("report", help="print the archived report of a run")
    report.add_argument("run", type=_run_id, metavar="RUN")
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument(
        "--fail-under",
        type=_fraction(False, False),
        metavar="P",
        help="exit 3 when the overall pass rate is below P (a fraction, 0 to 1), and 4 when "
        "more than 5 %% of the run's attempts did not run",
    )
    report.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML to FILE")
    report.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")
    add_lang(report)
    _add_project(report)
    _add_runs_dir(report)

    compare = commands.add_parser(
        "compare", help="compare two runs case by case, with a paired significance test"
    )
    compare.add_argument("run", type=_run_id, metavar="RUN")
    compare.add_argument(
        "baseline",
        type=_baseline,
        metavar="BASELINE",
        help="a run id, or 'previous' for the newest earlier run with a report that is not "
        "inconclusive by itself",
    )
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--alpha",
        type=_fraction(True, True),
        default=0.05,
        metavar="A",
        help="the significance level (default 0.05)",
    )
    compare.add_argument(
        "--max-unrun",
        type=_fraction(False, False),
        default=0.05,
        metavar="F",
        help="the comparison is inconclusive when more than this share of a run's attempts "
        "did not run (default 0.05)",
    )
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 3 when a group (overall, a suite, a split) regressed significantly, and 4 "
        "when the gate cannot decide: too many attempts did not run, or those that did not "
        "run could hide a regression",
    )
    _add_project(compare)
    _add_runs_dir(compare)

    plan = commands.add_parser(
        "plan", help="how many cases each suite needs to detect a drop in pass rate"
    )
    plan.add_argument(
        "--drop",
        type=_fraction(True, True),
        default=0.10,
        metavar="D",
        help="the drop in pass rate to detect, as a fraction (default 0.10)",
    )
    plan.add_argument(
        "--k", type=_positive, metavar="K", help="attempts per case (default: the run's)"
    )
    plan.add_argument(
        "--run",
        type=_run_id,
        metavar="RUN",
        help="the run to measure (default: the latest with a report)",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    _add_project(plan)
    _add_runs_dir(plan)

    rescore = commands.add_parser(
        "rescore", help="grade a run's evidence with the current criteria"
    )
    rescore.add_argument("run", type=_run_id, metavar="RUN")
    rescore.add_argument(
        "--offline", action="store_true", help="no runtime; judge answers from the cache only"
    )
    rescore.add_argument("--runtime", metavar="NAME", help="a runtime provider entry point")
    _add_project(rescore)
    _add_runs_dir(rescore)

    add_view_parser(commands, _add_project, _add_runs_dir)
    add_calibrate_parser(commands, _add_project, _add_runs_dir, _run_id)
    add_probe_parser(
        commands, _add_project, _add_runs_dir, _run_id, _fraction(False, False), _positive
    )
    add_export_parser(commands, _add_project, _add_runs_dir, _run_id)

    seal = commands.add_parser("seal", help="record the digests of the test cases")
    seal.add_argument("--append", action="store_true", help="only add new test cases")
    _add_project(seal)

    serve = commands.add_parser(
        "serve-reference",
        help="serve the bundled reference assistant (soev thread API)",
        description="Serve the bundled reference assistant; prints its URL once it listens.",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port, default=8765, help="0 picks a free port")
    serve.add_argument("--latency-ms", default="0", metavar="MS", help="time per turn")
    serve.add_argument("--failure-rate", default="0", metavar="P", help="chance a turn fails")
    serve.add_argument("--seed", default="0", help="seed of the failure draws")
    serve.add_argument("--corpus", metavar="PATH", help="a corpus lookup file (JSON Lines)")
    serve.add_argument("--token-env", metavar="NAME", help="require this variable's bearer token")
    return parser


def _quiet_thread_interrupts(hook: threading.ExceptHookArgs) -> None:
    """Threads (Dagster's, the runtime loop's) end silently on an interruption."""
    if hook.exc_value is not None and interrupted(hook.exc_value):
        return
    threading.__excepthook__(hook)


def main(argv: Sequence[str] | None = None, *, restore_sigint: bool = False) -> int:
    """Run the command line; return the exit status.

    Ctrl-C at any moment ends the command with one line and exit status 130; SIGTERM and
    SIGHUP end it the same way (see `signals`). `restore_sigint` gives Ctrl-C back to
    Python once the start-up guard that the package installs for the command (see
    `soev_pipeline/__init__.py`) is no longer needed, and forwards the other two.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    threading.excepthook = _quiet_thread_interrupts
    try:
        if restore_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            forward_to_interrupt()
        from . import commands

        handler = getattr(commands, "cmd_" + args.command.replace("-", "_"))
        status: int = handler(args)
        return status
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        if interrupted(unwrap(exc)):
            print(f"\n{interruption_name()}", file=sys.stderr)
            return interruption_status()
        if args.debug:
            traceback.print_exc()
        message, status = describe_error(exc, args)
        print(f"soev-evals: error: {printable(redact(message), keep='')}", file=sys.stderr)
        if status == EXIT_ERROR and not args.debug and not _is_user_error(exc):
            print("soev-evals: run with --debug for the traceback", file=sys.stderr)
        return status


def run(*, restore_sigint: bool = True) -> NoReturn:
    """The `soev-evals` console script: `main`, then a prompt exit.

    Once the command's output is flushed and its files are closed, tearing down the
    interpreter's modules and objects only costs time (most of a second after a large
    run), so the process ends without it.

    The command owns its process, so it also makes the cyclic garbage collector run less
    often (`COLLECTOR_THRESHOLDS`): nearly everything a run allocates is freed by reference
    counting, yet with Python's thresholds a 2,000-attempt run made some 1,100 young and 8
    full collections, each full one walking the hundreds of thousands of objects of the
    imported libraries: about 1 s of the run's 6 s of CPU, against 0.3 s with these.
    """
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    status = main(restore_sigint=restore_sigint)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _is_user_error(exc: BaseException) -> bool:
    from .errors import is_user_error

    return is_user_error(exc)
