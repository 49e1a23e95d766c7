"""The commands of `soev-evals`. Each returns its exit status; errors propagate to `main`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project import SEAL_FILE, ProjectPaths, load, write_seal
from soev_pipeline.run.archive import RunArchive, check_run_id, new_run_id
from soev_pipeline.run.report import read_report
from soev_pipeline.run.service import RunSelection
from soev_pipeline.runtime import BUILTIN, check_reachable

from .progress import TerminalProgress
from .render import render_report


def _paths(args: argparse.Namespace) -> ProjectPaths:
    """The project file of `--project` (which must exist) and the runs of `--runs-dir`."""
    path: Path = args.project
    if not path.exists():
        raise ProjectError(f"{path}: no such project file (give one with --project PATH)")
    return ProjectPaths.of(path, getattr(args, "runs_dir", None))


def cmd_run(args: argparse.Namespace) -> int:
    from soev_pipeline.orchestration import launch
    from soev_pipeline.orchestration.resources import load_project

    paths = _paths(args)
    project = load_project(paths.project_file, paths.runs)
    loaded = project.loaded
    runs_dir = paths.runs
    if args.k < 1:
        raise ProjectError(f"--k must be at least 1, not {args.k}")
    resume = args.resume is not None
    RunSelection(tuple(args.suite), args.split, args.k).check(loaded)
    run_id = check_run_id(args.resume or args.run_id or new_run_id())
    runtime = args.runtime or loaded.project.runtime
    if runtime in (None, BUILTIN):
        check_reachable(loaded)
    progress = TerminalProgress(sys.stderr)
    progress.phase(f"run {run_id}")
    try:
        launch.evaluate(
            project,
            run_id,
            suites=args.suite,
            split=args.split,
            k=args.k,
            runtime=args.runtime,
            resume=resume,
            progress=progress,
        )
    except BaseException as exc:
        progress.close()
        if _interrupted(exc):
            archive = RunArchive(runs_dir, run_id)
            done = len(archive.completed()) if archive.exists() else 0
            print(
                f"\ninterrupted: {done} attempts are archived in {archive.path}; "
                f"resume with: soev-evals run --resume {run_id}",
                file=sys.stderr,
            )
            return 130
        raise
    progress.close()
    archive = RunArchive(runs_dir, run_id)
    sys.stdout.write(render_report(read_report(archive)))
    sys.stdout.write(f"archive: {archive.path}\n")
    return 0


def _interrupted(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    return type(exc).__name__ in {"DagsterExecutionInterruptedError", "CancelledError"}


def cmd_report(args: argparse.Namespace) -> int:
    paths = _paths(args)
    load(paths.project_file, definitions=False)
    archive = RunArchive(paths.runs, check_run_id(args.run))
    report = read_report(archive)
    if args.json:
        sys.stdout.write(
            json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
        )
    else:
        sys.stdout.write(render_report(report))
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from soev_pipeline.orchestration import launch
    from soev_pipeline.orchestration.resources import load_project

    paths = _paths(args)
    archive = RunArchive(paths.runs, check_run_id(args.run))
    project = load_project(paths.project_file, paths.runs)
    archive.manifest()
    progress = TerminalProgress(sys.stderr)
    try:
        launch.rescore(
            project,
            archive.run_id,
            offline=args.offline,
            runtime=args.runtime,
            progress=progress,
        )
    finally:
        progress.close()
    sys.stdout.write(render_report(read_report(archive)))
    return 0


def cmd_seal(args: argparse.Namespace) -> int:
    path = _paths(args).project_file
    loaded = (
        load(path, allow_test_additions=True) if args.append else load(path, check_sealed=False)
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
