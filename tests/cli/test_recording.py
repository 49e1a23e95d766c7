"""`run`'s record in Dagster, made by a process forked for it (`cli.recording.Forked`) or on
a thread (`Threaded`): the same record, the same one warning when it fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.cli import recording
from soev_pipeline.project import ProjectPaths, load
from tests.support.thread_api import FakeThreadAPI

RUN_FORKED = """
import sys
from soev_pipeline.cli import recording
from soev_pipeline.cli.main import main

class OnAThread:
    forked = False

    def __init__(self, *args, **kwargs):
        raise AssertionError("the run was recorded on a thread of its own process")

recording.Threaded = OnAThread
status = main(sys.argv[1:])
assert "dagster" not in sys.modules, "the command imported Dagster"
sys.exit(status)
"""
"""`soev-evals run` in a process of its own, which fails when it records the run itself."""


def run_forked(
    *args: object, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **(env or {})}
    environment.pop(recording.IN_PROCESS_ENV, None)
    return subprocess.run(
        [sys.executable, "-c", RUN_FORKED, *map(str, args)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def _materialization(instance: Any, name: str, run: str) -> Any:
    import dagster as dg

    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[run]), limit=1
    ).records
    assert records, f"no materialization of {name} for {run}"
    return records[0].asset_materialization


@pytest.mark.e2e
def test_the_record_of_a_forked_process_is_the_record_made_in_the_command(
    project_path: Path, system: FakeThreadAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same assets, metadata keys, provenance tags and checks, whichever process made
    them; and the command that forked never imported Dagster itself."""
    import dagster as dg

    from soev_pipeline.orchestration.metadata import NO_SIGNIFICANT_REGRESSION
    from tests.support.cli import invoke

    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    forked = run_forked("run", "--project", project_path, "--run-id", "f1", "--suite", "kern")
    assert forked.returncode == 0, forked.stderr
    assert "recording it in Dagster failed" not in forked.stderr
    monkeypatch.setenv(recording.IN_PROCESS_ENV, "1")
    threaded = invoke("run", "--project", project_path, "--run-id", "t1", "--suite", "kern")
    assert threaded.status == 0, threaded.err
    with dg.DagsterInstance.get() as instance:
        for name in ("evidence", "verdicts", "report"):
            made, compared = (_materialization(instance, name, run) for run in ("f1", "t1"))
            # the second run has a previous one to compare with: the same keys besides
            assert set(made.metadata) == {
                key for key in compared.metadata if not key.startswith("vs_previous/")
            }, name
            assert set(made.tags) == set(compared.tags), name
            assert made.tags["soev/launched_by"] == "cli"
        for name in ("evidence", "verdicts"):
            assert (
                _materialization(instance, name, "f1").metadata["attempts"]
                == (_materialization(instance, name, "t1").metadata["attempts"])
            )
        # the second run records the suite again only if it changed: the forked record
        # made the first one, with its version
        suites = instance.fetch_materializations(dg.AssetKey("suites"), limit=10).records
        assert [record.asset_materialization.partition for record in suites] == ["kern"]
        for asset, check in (
            ("report", NO_SIGNIFICANT_REGRESSION),
            ("verdicts", "graded_with_current_prompts"),
        ):
            history = instance.event_log_storage.get_asset_check_execution_history(
                dg.AssetCheckKey(dg.AssetKey(asset), check), limit=10
            )
            assert len(history) == 2, check


@pytest.mark.e2e
def test_a_forked_record_that_fails_is_the_one_warning_after_a_finished_run(
    project_path: Path, system: FakeThreadAPI, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("storage: {no_such_storage: {}}\n", encoding="utf-8")
    forked = run_forked(
        "run",
        "--project",
        project_path,
        "--run-id",
        "w1",
        "--suite",
        "kern",
        env={"DAGSTER_HOME": str(home)},
    )
    assert forked.returncode == 0, forked.stderr
    warnings = [line for line in forked.stderr.splitlines() if "recording it in Dagster" in line]
    assert len(warnings) == 1, forked.stderr
    assert warnings[0].startswith("soev-evals: warning: the run is archived, but recording")
    assert "`soev-evals rescore w1` records it again" in warnings[0]
    assert (project_path.parent / "runs" / "w1" / "scorings").is_dir()


RUN_WITH_A_DYING_RECORDER = """
import os, sys, types
from soev_pipeline.cli import recording
from soev_pipeline.cli.main import main

command, when = os.getpid(), sys.argv.pop(1)
real = recording.importlib.import_module


def import_module(name, *args):
    if name != recording.RECORD_MODULE or os.getpid() == command:
        return real(name, *args)
    if when == "import":
        os._exit(9)  # the recording process dies as it imports Dagster
    module = real(name, *args)

    class DiesAfterTheFirstPart(module.Recording):
        def finish(self, evaluation):
            if evaluation is not None:
                os._exit(9)  # the first part is recorded and answered
            super().finish(evaluation)

    return types.SimpleNamespace(**{**vars(module), "Recording": DiesAfterTheFirstPart})


recording.importlib = types.SimpleNamespace(import_module=import_module)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.e2e
@pytest.mark.parametrize("when", ["import", "graded"])
def test_a_recording_process_that_dies_leaves_the_rest_of_the_record_to_the_command(
    when: str,
    project_path: Path,
    system: FakeThreadAPI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dead before it answered, or after it answered the first part: the command records
    what is missing, and nothing twice."""
    import dagster as dg

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    environment = {**os.environ}
    environment.pop(recording.IN_PROCESS_ENV, None)
    command = [sys.executable, "-c", RUN_WITH_A_DYING_RECORDER, when, "run"]
    done = subprocess.run(
        [*command, "--project", str(project_path), "--run-id", "d1", "--suite", "kern"],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "recording it in Dagster" not in done.stderr
    with dg.DagsterInstance.get() as instance:
        for name in ("evidence", "verdicts", "report"):
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=["d1"]),
                limit=10,
            ).records
            assert len(records) == 1, name
        history = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("verdicts"), "graded_with_current_prompts"), limit=10
        )
        assert len(history) == 1


FORK_AND_LEAVE = """
import os, sys, time
from pathlib import Path
from soev_pipeline.cli import recording
from soev_pipeline.project import ProjectPaths, load

folder = Path(sys.argv[3])
sys.path.insert(0, str(folder))
recording.RECORD_MODULE = "slow_record"
paths = ProjectPaths.of(Path(sys.argv[1]), None)
forked = recording.Forked.start(paths, load(paths.project_file))
(folder / "pid").write_text(str(forked._pid))
while not (folder / "recording").exists():  # the process is inside its record
    time.sleep(0.05)
if sys.argv[2] == "exit":
    os._exit(3)  # as a kill -9 would
getattr(forked, sys.argv[2])(*([None] if sys.argv[2] == "finish" else []))
"""
"""Fork the recording process, wait until it is inside a record that takes an hour (a
locked instance), then abandon it, finish a run that failed before grading, or die."""

SLOW_RECORD = """
import sys, time
from pathlib import Path

print("a line of the record", flush=True)
(Path(sys.argv[3]) / "recording").write_text("")
time.sleep(3600)
"""


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["abandon", "finish", "exit"])
def test_the_recording_process_stops_with_the_command(
    how: str, project_path: Path, tmp_path: Path
) -> None:
    """Abandoned (Ctrl-C), told the run failed before anything was graded, or left by a
    command that died: the recording process is stopped at once, as the thread that
    recorded in the command died with it; it printed nothing on the command's output."""
    (tmp_path / "slow_record.py").write_text(SLOW_RECORD, encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    try:  # the recording process holds the command's standard error until it ends
        done = subprocess.run(
            [sys.executable, "-c", FORK_AND_LEAVE, str(project_path), how, str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)
        pytest.fail("the recording process went on after the command")
    assert done.returncode == (3 if how == "exit" else 0), done.stderr
    assert (tmp_path / "recording").exists()
    assert "a line of the record" not in done.stdout  # the command's output is its own


def test_a_message_longer_than_the_pipe_goes_whole_and_a_cut_one_is_the_end() -> None:
    read, write = os.pipe()
    message = ("graded", b"x" * (1 << 20), list(range(1000)))
    sender = threading.Thread(target=recording._send, args=(write, message))
    sender.start()
    assert recording._receive(read) == message
    sender.join()
    os.write(write, recording._HEADER.pack(100) + b"only part of it")
    os.close(write)
    assert recording._receive(read) is None
    os.close(read)


def test_a_recording_process_whose_command_is_gone_stops_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A grading worker the command forked may hold the pipe open after the command died:
    the process then sees its parent change, not the end of the pipe."""
    monkeypatch.setattr(recording, "_POLL_S", 0.01)
    read, write = os.pipe()
    try:
        recording._send(write, ("finish", None))
        assert recording._receive(read, parent=os.getppid()) == ("finish", None)
        assert recording._receive(read, parent=-1) is None  # not this one's parent: gone
    finally:
        os.close(read)
        os.close(write)


def test_the_record_is_made_on_a_thread_where_forking_is_unsafe(
    project_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = ProjectPaths.of(project_path, None)
    loaded = load(paths.project_file)
    started: list[str] = []
    monkeypatch.setattr(
        recording.Forked, "start", classmethod(lambda cls, *a: started.append("fork"))
    )
    monkeypatch.delenv(recording.IN_PROCESS_ENV, raising=False)
    alive = threading.Thread(target=time.sleep, args=(0.5,))
    alive.start()  # this test's process runs another thread
    try:
        assert isinstance(recording.start_recording(paths, loaded), recording.Threaded)
    finally:
        alive.join()
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    in_object_storage = ProjectPaths.of(project_path, "s3://bucket/runs")
    assert isinstance(recording.start_recording(in_object_storage, loaded), recording.Threaded)
    monkeypatch.setenv(recording.IN_PROCESS_ENV, "1")
    assert isinstance(recording.start_recording(paths, loaded), recording.Threaded)
    assert started == []
    monkeypatch.delenv(recording.IN_PROCESS_ENV)
    assert isinstance(recording.start_recording(paths, loaded), recording.Threaded)  # start: None
    assert started == ["fork"]
