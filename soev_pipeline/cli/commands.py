"""The commands of `soev-evals`. Each returns its exit status; errors propagate to `main`."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project import SEAL_FILE, ProjectPaths, load, write_seal
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.compare import compare_runs, latest_run, previous_run, read_rates
from soev_pipeline.run.junit import write_junit
from soev_pipeline.run.manifest import check_same_project
from soev_pipeline.run.plan import plan
from soev_pipeline.run.report import read_report
from soev_pipeline.run.service import RunSelection, attempt_selected
from soev_pipeline.runtime import BUILTIN, RuntimeSession, check_reachable
from soev_pipeline.runtime.session import CANCEL_GRACE_S

from .errors import EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, interrupted
from .progress import TerminalProgress
from .render import render_comparison, render_plan, render_report, write_report_json


def _paths(args: argparse.Namespace) -> ProjectPaths:
    """The project file of `--project` (which must exist) and the runs of `--runs-dir`."""
    path: Path = args.project
    if not path.exists():
        raise ProjectError(f"{path}: no such project file (give one with --project PATH)")
    return ProjectPaths.of(path, getattr(args, "runs_dir", None))


def cmd_run(args: argparse.Namespace) -> int:
    """Start the attempts at once and, beside them, load Dagster and run the `evaluate` job
    of the project's instance, whose `attempt` step waits for them and records them."""
    paths = _paths(args)
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    if args.k < 1:
        raise ProjectError(f"--k must be at least 1, not {args.k}")
    resume = args.resume is not None
    selection = RunSelection(tuple(args.suite), args.split, args.k)
    selection.check(loaded)
    run_id = check_run_id(args.resume or args.run_id or new_run_id())
    runtime = args.runtime or loaded.project.runtime
    if runtime in (None, BUILTIN):
        check_reachable(loaded)
    archive = RunArchive(paths.runs, run_id)
    if resume:
        archive.manifest()
    progress = TerminalProgress(sys.stderr)
    progress.phase(f"run {run_id}")
    session = RuntimeSession()
    try:
        with archive.locked("resume" if resume else "run"):
            bindings = session.run(session.bindings(loaded, runtime, "run", paths.state))
            attempts = session.submit(
                attempt_selected(
                    loaded,
                    paths.runs,
                    run_id,
                    selection,
                    bindings,
                    resume=resume,
                    runtime=runtime,
                    progress=progress,
                )
            )

            def evaluate() -> None:
                import pandas  # noqa: F401 - for the report's tables, imported while attempting

                from soev_pipeline.orchestration import launch
                from soev_pipeline.orchestration.names import names_of
                from soev_pipeline.orchestration.resources import SoevProject

                launch.evaluate(
                    SoevProject(loaded, paths, names_of(paths.project_file)),
                    run_id,
                    suites=args.suite,
                    split=args.split,
                    k=args.k,
                    runtime=args.runtime,
                    resume=resume,
                    progress=progress,
                    notice=_notice,
                    attempted=attempts,
                    session=session,
                )

            dagster = _Background(evaluate)
            try:
                dagster.wait()
            except BaseException:
                # Ctrl-C (or a failure): stop the attempts or the grading, and let the
                # Dagster run record that it failed before the command ends
                session.interrupt()
                dagster.wait(timeout=CANCEL_GRACE_S, reraise=False)
                raise
    except BaseException as exc:
        progress.close()
        if interrupted(exc):
            if archive.exists():
                done = len(archive.completed())
                print(
                    f"\ninterrupted: {done} {'attempt is' if done == 1 else 'attempts are'} "
                    f"archived in {archive.path}; "
                    f"resume with: soev-evals run --resume {run_id}",
                    file=sys.stderr,
                )
            else:
                print(
                    "\ninterrupted before the run was archived; nothing to resume", file=sys.stderr
                )
            return EXIT_INTERRUPTED
        raise
    finally:
        session.close()
    progress.close()
    sys.stdout.write(render_report(read_report(archive)))
    sys.stdout.write(f"archive: {archive.path}\n")
    return 0


class _Background:
    """Work in a thread of its own (the Dagster part of a run: importing Dagster alone takes
    a second or two), while the command's thread waits and can take a Ctrl-C."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._error: BaseException | None = None
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(work,), daemon=True).start()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the command's thread by `wait`
            self._error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None, *, reraise: bool = True) -> None:
        """Wait for the work (at most `timeout` seconds) and raise its error, if any.

        An Event, not `Thread.join`: a join that a Ctrl-C interrupts can leave the thread
        marked as ended while it still runs."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.wait(0.25):
            if deadline is not None and time.monotonic() >= deadline:
                return
        if reraise and self._error is not None:
            raise self._error


def _notice(text: str) -> None:
    print(f"soev-evals: {text}", file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    paths = _paths(args)
    project = load(paths.project_file, definitions=False, suite_cache=paths.suite_cache).project
    archive = RunArchive(paths.runs, check_run_id(args.run))
    check_same_project(archive.manifest(), project.name)
    report = read_report(archive)
    if args.json:
        write_report_json(report, sys.stdout)
    else:
        sys.stdout.write(render_report(report))
    if args.junit is not None:
        write_junit(args.junit.resolve(), report, read_rates(archive))
    rate = report.overall.pass_rate
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
    project = load(paths.project_file, definitions=False, suite_cache=paths.suite_cache).project
    run = RunArchive(paths.runs, check_run_id(args.run))
    manifest = run.manifest()
    check_same_project(manifest, project.name)
    if args.baseline == "previous":
        baseline = previous_run(paths.runs, manifest)
        if baseline is None:
            raise ProjectError(
                f"{paths.runs}: run {run.run_id!r} has no earlier run of project "
                f"{project.name!r} with a report to compare with"
            )
    else:
        baseline = RunArchive(paths.runs, check_run_id(args.baseline))
        check_same_project(baseline.manifest(), project.name)
    comparison = compare_runs(run, baseline, alpha=args.alpha)
    if args.json:
        _print_json(comparison.model_dump(mode="json"))
    else:
        sys.stdout.write(render_comparison(comparison))
    if args.fail_on_regression and comparison.regressed:
        print(
            f"soev-evals: quality gate failed: run {run.run_id!r} regressed significantly "
            f"against {baseline.run_id!r}",
            file=sys.stderr,
        )
        return EXIT_GATE
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    paths = _paths(args)
    project = load(paths.project_file, definitions=False, suite_cache=paths.suite_cache).project
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
    groups = plan(read_rates(run), suites, run_k=manifest.k, k=k, drop=args.drop)
    if args.json:
        _print_json(
            {
                "run_id": run.run_id,
                "run_k": manifest.k,
                "k": k,
                "drop": args.drop,
                "alpha": 0.05,
                "power": 0.8,
                "groups": {group.name: asdict(group) for group in groups},
            }
        )
    else:
        sys.stdout.write(
            render_plan(groups, run_id=run.run_id, run_k=manifest.k, k=k, drop=args.drop)
        )
    return EXIT_OK


def cmd_rescore(args: argparse.Namespace) -> int:
    from soev_pipeline.orchestration.resources import load_project

    paths = _paths(args)
    archive = RunArchive(paths.runs, check_run_id(args.run))
    project = load_project(paths.project_file, paths.runs)
    archive.manifest()
    # the corpus indexes are built (on the other core) while Dagster loads and the run
    # starts; the grading step waits for them, or builds them itself if this build failed
    warm = getattr(project.loaded.context.corpus, "warm_beside", None)
    if callable(warm):
        warm()
    from soev_pipeline.orchestration import launch

    progress = TerminalProgress(sys.stderr)
    try:
        with archive.locked("rescore"):
            launch.rescore(
                project,
                archive.run_id,
                offline=args.offline,
                runtime=args.runtime,
                progress=progress,
                notice=_notice,
            )
    finally:
        progress.close()
    sys.stdout.write(render_report(read_report(archive)))
    return 0


def cmd_seal(args: argparse.Namespace) -> int:
    paths = _paths(args)
    path, cache = paths.project_file, paths.suite_cache
    loaded = (
        load(path, allow_test_additions=True, suite_cache=cache)
        if args.append
        else load(path, check_sealed=False, suite_cache=cache)
    )
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
