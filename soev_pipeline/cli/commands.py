"""The commands of `soev-evals`. Each returns its exit status; errors propagate to `main`."""

from __future__ import annotations

import argparse
import errno
import functools
import importlib
import json
import logging
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from soev_pipeline import api
from soev_pipeline.core import transport
from soev_pipeline.core.chars import printable
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.explain import explain, unwrap
from soev_pipeline.core.outputs import check_output
from soev_pipeline.core.power import POWER
from soev_pipeline.core.stats import ALPHA
from soev_pipeline.project import (
    SEAL_FILE,
    LoadedProject,
    ProjectPaths,
    load,
    load_for_sealing,
    owned_paths,
    read_project,
    write_seal,
)
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.compare import compare_rates, compare_runs
from soev_pipeline.run.heap import frozen_heap
from soev_pipeline.run.junit import write_junit
from soev_pipeline.run.manifest import check_same_project
from soev_pipeline.run.plan import plan
from soev_pipeline.run.report import read_report
from soev_pipeline.run.run_attempts import (
    latest_run,
    previous_attempts,
    previous_run,
    read_attempts,
)
from soev_pipeline.run.service import RunSelection

from .calibrating import calibrated_report
from .calibrating import cmd_calibrate as cmd_calibrate
from .errors import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_OK, RunStoppedError, interrupted, notice
from .exporting import cmd_export as cmd_export
from .probing import cmd_probe_judge as cmd_probe_judge
from .progress import Preloading, TerminalProgress
from .recording import RECORD_MODULE, record_now, start_recording
from .render import render_comparison, render_plan, render_report, write_report_json
from .signals import interruption_name, interruption_status
from .viewing import cmd_view as cmd_view
from .viewing import write_html

logger = logging.getLogger(__name__)


def _after_the_run(paths: ProjectPaths, loaded: LoadedProject, *, record: bool) -> None:
    """What `run` imports and prepares while its attempts run: to write its HTML report (its
    templates compiled: `html_report.warm`), and with `record`, to record the run in this
    process (Dagster, the project's instance opened with its storage connected, the
    suites' versions: `record.open_ahead`)."""
    importlib.import_module("soev_pipeline.view.html_report").warm()
    if record:
        importlib.import_module(RECORD_MODULE).open_ahead(paths, loaded)


def _close_ahead() -> None:
    """Close what the start-up thread opened for the record, if it got that far.

    The thread may still be importing the record's module (a run that fails at once): then
    the module is in `sys.modules` but not yet whole, and there is nothing of it to close. A
    failure to close never hides the error that stopped the run.
    """
    recording = sys.modules.get(RECORD_MODULE)
    close = getattr(recording, "close_ahead", None)
    if close is None:
        return
    try:
        close()
    except Exception:  # the run's own error is the one to report
        logger.debug("closing the instance opened ahead failed", exc_info=True)


def _paths(args: argparse.Namespace) -> ProjectPaths:
    """The project file of `--project` (which must exist) and the runs of `--runs-dir`."""
    path: Path = args.project
    if not path.exists():
        raise ProjectError(f"{path}: no such project file (give one with --project PATH)")
    return ProjectPaths.of(path, getattr(args, "runs_dir", None))


def _prepare_transport() -> None:
    """`transport.prepare` on a thread of its own, while the project loads; an error is
    dropped: it is raised again by the first request, where it is explained."""

    def prepare() -> None:
        try:
            transport.prepare()
        except Exception:
            logger.debug("preparing the transport failed", exc_info=True)

    threading.Thread(target=prepare, name="soev-transport", daemon=True).start()


def cmd_run(args: argparse.Namespace) -> int:
    """Attempt, grade and aggregate the run (`soev_pipeline.api`), then record it in the
    project's Dagster instance and print its report."""
    paths = _paths(args)
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    resume = args.resume is not None
    if not resume:
        RunSelection(tuple(args.suite), args.split, args.k).check(loaded)
    run_id = check_run_id(args.resume or args.run_id or new_run_id())
    recording = start_recording(paths, loaded)  # before the first thread: it may fork
    _prepare_transport()
    preload = functools.partial(_after_the_run, paths, loaded, record=not recording.forked)
    progress = Preloading(sys.stderr, preload)
    progress.phase(f"run {run_id}")
    try:
        evaluation = api.run_sync(
            api.evaluate_run(
                loaded,
                k=args.k,
                suites=args.suite,
                split=args.split,
                run_id=run_id,
                resume=resume,
                runtime=args.runtime,
                runs_dir=paths.runs,
                progress=progress,
                retry_unrun=args.retry_unrun,
                graded=recording.graded,
            )
        )
    except BaseException as exc:
        progress.close()
        if interrupted(exc):  # it goes at once: each write is whole
            recording.abandon()
        else:
            recording.finish(None)
        _close_ahead()
        if interrupted(exc):
            _interrupted(RunArchive(paths.runs, run_id))
            return interruption_status()
        stopped = _stopped(RunArchive(paths.runs, run_id), unwrap(exc))
        if stopped is not None:
            raise stopped from exc
        raise
    progress.close()
    recording.finish(evaluation)
    assert evaluation.report is not None  # every step ran
    _print(render_report(evaluation.report))
    sys.stdout.write(f"archive: {evaluation.archive.location}\n")
    return EXIT_OK


def _interrupted(archive: RunArchive) -> None:
    """The one line of an interrupted run: what is archived, and how to go on."""
    how = interruption_name()
    if archive.exists():
        done = len(archive.completed())
        print(
            f"\n{how}: {done} {'attempt is' if done == 1 else 'attempts are'} "
            f"archived in {archive.location}; "
            f"resume with: soev-evals run --resume {archive.run_id}",
            file=sys.stderr,
        )
    else:
        print(f"\n{how} before the run was archived; nothing to resume", file=sys.stderr)


def _stopped(archive: RunArchive, exc: BaseException) -> RunStoppedError | None:
    """The one line of a run that a file stopped (a full disk): the file, what is archived,
    and how to go on; None when it is not such a stop, or nothing was archived."""
    if not isinstance(exc, OSError) or isinstance(exc, ConnectionError) or not archive.exists():
        return None
    try:
        done = len(archive.completed())
    except (OSError, ProjectError):
        return None
    when = (
        "free some space"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT)
        else "once the file can be written"
    )
    attempts = "attempt is" if done == 1 else "attempts are"
    return RunStoppedError(
        f"{explain(exc)}; run {archive.run_id!r} stopped, {done} {attempts} archived in "
        f"{archive.path}; {when}, then resume with: soev-evals run --resume {archive.run_id}"
    )


def _print(text: str) -> None:
    """Plain output: replies and details quoted in it may hold control characters (ESC,
    NUL), which are shown escaped rather than sent to the terminal raw."""
    sys.stdout.write(printable(text))


def cmd_report(args: argparse.Namespace) -> int:
    paths = _paths(args)
    project = read_project(paths.project_file)
    archive = RunArchive(paths.runs, check_run_id(args.run))
    owned = owned_paths(paths, project)
    for option, output in (("--junit", args.junit), ("--html", args.html)):
        if output is not None:  # before any work, and before the other flag writes
            check_output(output, option=option, owned=owned)
    check_same_project(archive.manifest(), project.name)
    with frozen_heap():
        report = read_report(archive)
    if args.json:
        write_report_json(calibrated_report(paths, archive, report), sys.stdout)
    else:
        _print(render_report(report))
    if args.junit is not None:
        write_junit(args.junit, report, read_attempts(archive), owned=owned)
    if args.html is not None:
        write_html(args, paths, archive, owned)
    rate = report.overall.pass_rate
    if args.fail_under is not None and report.inconclusive:
        print(
            "soev-evals: the quality gate cannot decide: "
            f"{report.unrun.describe(report.expected_attempts)}, more than 5 %",
            file=sys.stderr,
        )
        return EXIT_INCONCLUSIVE
    if args.fail_under is not None and (rate is None or rate < args.fail_under):
        shown = "none" if rate is None else f"{100 * rate:.1f} %"
        print(
            f"soev-evals: quality gate failed: the overall pass rate ({shown}) is below "
            f"{100 * args.fail_under:.1f} %",
            file=sys.stderr,
        )
        return EXIT_GATE
    return EXIT_OK


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def cmd_compare(args: argparse.Namespace) -> int:
    paths = _paths(args)
    project = read_project(paths.project_file)
    run = RunArchive(paths.runs, check_run_id(args.run))
    manifest = run.manifest()
    check_same_project(manifest, project.name)
    if args.baseline == "previous":
        baseline = previous_run(paths.runs, manifest, max_unrun=args.max_unrun)
        if baseline is None:  # the first night, or after nights that were all inconclusive
            notice(
                f"nothing to compare with: run {run.run_id!r} has no earlier run of project "
                f"{project.name!r} with a report, of whose attempts at most "
                f"{100 * args.max_unrun:g} % did not run; no regression to find"
            )
            return EXIT_OK
    else:
        baseline = RunArchive(paths.runs, check_run_id(args.baseline))
        check_same_project(baseline.manifest(), project.name)
    comparison = compare_runs(run, baseline, alpha=args.alpha, max_unrun=args.max_unrun)
    if args.json:
        _print_json(comparison.model_dump(mode="json"))
    else:
        _print(render_comparison(comparison))
    if not args.fail_on_regression or comparison.gate == "passed":
        return EXIT_OK
    if comparison.gate == "failed":
        print(
            f"soev-evals: quality gate failed: run {run.run_id!r} regressed significantly "
            f"against {baseline.run_id!r}",
            file=sys.stderr,
        )
        return EXIT_GATE
    share = f" (more than {100 * args.max_unrun:g} % of a run's attempts)"
    print(
        f"soev-evals: the quality gate cannot decide: {comparison.why_undecided()}"
        + (share if comparison.inconclusive else ""),
        file=sys.stderr,
    )
    return EXIT_INCONCLUSIVE


def cmd_plan(args: argparse.Namespace) -> int:
    paths = _paths(args)
    project = read_project(paths.project_file)
    if args.run is not None:
        run: RunArchive | None = RunArchive(paths.runs, check_run_id(args.run))
    else:
        run = latest_run(paths.runs, project.name)
    if run is None:
        raise ProjectError(
            f"{paths.runs}: no run of project {project.name!r} has a report yet; "
            "plan needs one to measure how much case rates vary"
        )
    manifest = run.manifest()
    check_same_project(manifest, project.name)
    k = args.k or manifest.k
    suites = [entry.name for entry in project.suites]
    attempts = read_attempts(run)
    comparison = None
    if manifest.k == 1:
        before = previous_attempts(paths.runs, manifest)
        comparison = compare_rates(attempts, before) if before is not None else None
    groups = plan(attempts, suites, k=k, drop=args.drop, comparison=comparison)
    if args.json:
        _print_json(
            {
                "run_id": run.run_id,
                "run_k": manifest.k,
                "k": k,
                "drop": args.drop,
                "alpha": ALPHA,
                "power": POWER,
                "groups": {group.name: asdict(group) for group in groups},
            }
        )
    else:
        _print(render_plan(groups, run_id=run.run_id, run_k=manifest.k, k=k, drop=args.drop))
    return EXIT_OK


def cmd_rescore(args: argparse.Namespace) -> int:
    """Grade the run's archived evidence again (`soev_pipeline.api`), record the new scoring
    in Dagster and print its report."""
    paths = _paths(args)
    archive = RunArchive(paths.runs, check_run_id(args.run))
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    archive.manifest()
    progress = TerminalProgress(sys.stderr)
    try:
        evaluation = api.run_sync(
            api.rescore_run(
                loaded,
                archive.run_id,
                offline=args.offline,
                runtime=args.runtime,
                runs_dir=paths.runs,
                progress=progress,
            )
        )
    finally:
        progress.close()
    record_now(evaluation)
    assert evaluation.report is not None  # every step ran
    _print(render_report(evaluation.report))
    return EXIT_OK


def cmd_seal(args: argparse.Namespace) -> int:
    paths = _paths(args)
    loaded = load_for_sealing(paths.project_file, append=args.append, suite_cache=paths.suite_cache)
    tests = [case for case in loaded.cases() if case.split == "test"]
    result = write_seal(loaded.directory, tests, append=args.append)
    changes = f"{result.added} added, {result.replaced} replaced, {result.removed} removed"
    print(f"sealed {result.sealed} test cases in {loaded.directory / SEAL_FILE} ({changes})")
    return 0


def cmd_serve_reference(args: argparse.Namespace) -> int:
    from soev_pipeline.reference.command import main as serve

    argv = ["--host", args.host, "--port", str(args.port), "--latency-ms", args.latency_ms]
    argv += ["--failure-rate", args.failure_rate, "--seed", args.seed]
    if args.corpus:
        argv += ["--corpus", args.corpus]
    if args.token_env:
        argv += ["--token-env", args.token_env]
    return serve(argv)
