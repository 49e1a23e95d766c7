"""The parser of the command line (docs/runs.md#the-command-line): its options and defaults,
and usage errors that exit 2 with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.cli.main import build_parser
from soev_pipeline.project import ProjectPaths


def test_run_takes_the_options_of_section_8() -> None:
    argv = ["run", "--suite", "kern", "--suite", "privacy", "--split", "dev", "--k", "3"]
    argv += ["--run-id", "r1.a_b-c", "--runtime", "mine", "--runs-dir", "elders"]
    args = build_parser().parse_args(argv)
    assert args.suite == ["kern", "privacy"]
    assert (args.split, args.k, args.run_id, args.resume) == ("dev", 3, "r1.a_b-c", None)
    assert (args.runtime, args.runs_dir) == ("mine", Path("elders"))


def test_without_options_every_suite_both_splits_one_attempt_and_project_yaml_here() -> None:
    args = build_parser().parse_args(["run"])
    assert (args.suite, args.split, args.k) == ([], None, 1)
    assert (args.run_id, args.resume, args.runtime, args.runs_dir) == (None, None, None, None)
    assert args.project == Path("project.yaml")
    assert build_parser().parse_args(["report", "r1"]).project == Path("project.yaml")


def test_report_rescore_and_seal_take_their_options() -> None:
    parser = build_parser()
    report = parser.parse_args(["report", "r1", "--json", "--runs-dir", "x"])
    assert (report.run, report.json, report.runs_dir) == ("r1", True, Path("x"))
    rescore = parser.parse_args(["rescore", "r1", "--offline", "--runtime", "mine"])
    assert (rescore.run, rescore.offline, rescore.runtime) == ("r1", True, "mine")
    assert parser.parse_args(["seal", "--append"]).append is True
    assert parser.parse_args(["--debug", "seal"]).debug is True


def test_compare_takes_its_share_of_attempts_that_may_not_have_run() -> None:
    parser = build_parser()
    compare = parser.parse_args(["compare", "r2", "previous"])
    assert (compare.alpha, compare.max_unrun, compare.fail_on_regression) == (0.05, 0.05, False)
    assert parser.parse_args(["compare", "r2", "r1", "--max-unrun", "0"]).max_unrun == 0.0
    assert parser.parse_args(["compare", "r2", "r1", "--max-unrun", "1"]).max_unrun == 1.0


USAGE_ERRORS = [
    [],
    ["frobnicate"],
    ["run", "--k", "veel"],
    ["run", "--k", "0"],
    ["run", "--split", "train"],
    ["run", "--resume", "a", "--run-id", "b"],
    ["report"],
    ["rescore"],
    ["seal", "--appendix"],
    ["compare", "r2", "r1", "--max-unrun", "-0.1"],
    *(["run", f"--run-id={bad}"] for bad in ["R1", "-r1", "r 1", "r/1", "_r1", "ab:c", "Bad,Id"]),
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=lambda argv: " ".join(argv) or "nothing")
def test_a_usage_error_exits_2_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip("\n").splitlines()[-1].startswith("soev-evals")
    assert "Traceback" not in err


def test_a_runs_folder_url_of_another_store_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["report", "latest", "--runs-dir", "gs://bucket/runs"])
    assert exited.value.code == 2
    assert "argument --runs-dir: gs://bucket/runs: a runs folder is a folder or s3://" in (
        capsys.readouterr().err
    )


def test_a_bad_run_id_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--run-id", "Bad,Id"])
    assert "run id 'Bad,Id' is not valid" in capsys.readouterr().err


def test_the_console_script_makes_the_collector_run_less_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc
    import importlib

    cli_main = importlib.import_module(
        "soev_pipeline.cli.main"
    )  # the package's `main` is the function

    class Exited(Exception):
        pass

    def exit_(status: int) -> None:
        raise Exited(status)

    monkeypatch.setattr(cli_main, "main", lambda **_: 0)
    monkeypatch.setattr(cli_main.os, "_exit", exit_)
    before = gc.get_threshold()
    try:
        with pytest.raises(Exited):
            cli_main.run()
        assert gc.get_threshold() == cli_main.COLLECTOR_THRESHOLDS
        assert cli_main.COLLECTOR_THRESHOLDS[0] > before[0]
    finally:
        gc.set_threshold(*before)


def test_run_forks_its_recorder_before_it_starts_a_thread_then_prepares_the_transport(
    project_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fork copies only the calling thread: the recording process is forked before the
    transport is prepared on a thread of its own."""
    import threading

    from soev_pipeline.cli import commands, recording
    from soev_pipeline.cli.main import main

    events: list[str] = []
    prepared = threading.Event()

    def start_recording(paths: ProjectPaths, loaded: object) -> recording.Recorder:
        running = {thread.name for thread in threading.enumerate()}
        events.append("forked" if "soev-transport" not in running else "forked too late")
        return recording.Threaded(paths)

    def prepare() -> None:
        assert threading.current_thread().name == "soev-transport"
        events.append("prepared")
        prepared.set()

    monkeypatch.setattr(commands, "start_recording", start_recording)
    monkeypatch.setattr(commands.transport, "prepare", prepare)
    status = main(["run", "--project", str(project_path), "--suite", "kern"])
    assert status == 0, capsys.readouterr().err
    assert prepared.wait(60)
    assert events == ["forked", "prepared"]
