"""`make ui` as a person runs it: the Dagster UI answers, each project's viewer link answers,
and Ctrl-C (SIGINT to the process group) or SIGTERM to make leaves no process behind.

Every process the command starts, however deep and even once its parent has ended, carries
a marker in its environment; a process counts as left behind while /proc lists it with the
marker and it has not ended (a zombie that nobody reaped has ended).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from soev_pipeline.cli.main import main
from soev_pipeline.project.listing import view_url
from tests.conftest import write_project
from tests.support.thread_api import FakeThreadAPI

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("no_instance_left_current"),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc"),
]

REPO = Path(__file__).resolve().parents[2]
MARK = "SOEV_TEST_UI_MARK"
START_S = 180  # safety valves only: how long to wait at most, never a measured expectation
STOP_S = 120


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _marked(mark: str) -> dict[int, tuple[str, bytes]]:
    """The processes that run with `MARK=mark` in their environment: pid → (command line,
    environment)."""
    needle = f"{MARK}={mark}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            environ = (entry / "environ").read_bytes()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and needle in environ.split(b"\0"):
            found[int(entry.name)] = (command.strip(), environ)
    return found


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def _as_from_a_shell() -> None:
    """In the child before it runs the command: the signals a shell would give it, none
    blocked and the stop signals at their defaults, whatever this test process has inherited
    or been left with by another test (an ignored SIGTERM is inherited across exec, and
    make keeps a signal ignored that it started with)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _signal_state(pid: int) -> str:
    """The blocked and ignored signal masks of process `pid`, for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""
    return " ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn")))


class UI:
    """`command` (make ui, or scripts/ui.py) started in a process group of its own."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path, port: int) -> None:
        self.mark = uuid.uuid4().hex
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                command,
                cwd=REPO,
                env={**env, MARK: self.mark},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_as_from_a_shell,
            )

    def wait_until_it_answers(self) -> None:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"it ended: {self.log.read_text()[-3000:]}"
            try:
                if _get(f"{self.url}/server_info")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail(f"the UI did not answer in {START_S} s: {self.log.read_text()[-3000:]}")

    def processes(self) -> dict[int, tuple[str, bytes]]:
        return _marked(self.mark)

    def left_after(self, stop: signal.Signals, *, group: bool) -> list[str]:
        """Send `stop` (to the whole group, as Ctrl-C in a terminal does, or to the
        command's process alone); the command lines of what still runs after STOP_S."""
        assert len(self.processes()) >= 5, self.processes()
        if group:
            os.killpg(self.process.pid, stop)
        else:
            self.process.send_signal(stop)
        deadline = time.monotonic() + STOP_S
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [command for command, _ in self.processes().values()]
        if not left:
            self.process.wait(timeout=10)  # it has ended: only its exit status is read
        return left

    def kill_what_is_left(self) -> None:
        for pid in self.processes():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=60)  # reaped here, not by a later test's collector

    def tail(self) -> str:
        state = f"this process: {_signal_state(os.getpid())}\n"
        return state + self.log.read_text(errors="replace")[-3000:]


@contextmanager
def started(command: list[str], env: dict[str, str], log: Path, port: int) -> Iterator[UI]:
    ui = UI(command, env, log, port)
    try:
        ui.wait_until_it_answers()
        yield ui
    finally:
        ui.kill_what_is_left()


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOEV_")}
    home = tmp_path / "home"
    return {**env, "DAGSTER_HOME": str(home), "SOEV_RUNS_DIR": str(tmp_path / "runs"), **more}


def test_ctrl_c_stops_every_process_it_started(tmp_path: Path) -> None:
    port = _free_port()
    # as a script's background job (`make ui &`) starts it: with SIGINT ignored, which
    # every process it starts would inherit
    command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"]
    command += [sys.executable, "scripts/ui.py", "-p", str(port)]
    with started(command, _env(tmp_path), tmp_path / "ui.log", port) as ui:
        commands = " | ".join(command for command, _ in ui.processes().values())
        left = ui.left_after(signal.SIGINT, group=True)
    assert left == [], ui.tail()
    assert ui.process.returncode == 0
    for one in ("serve-reference", "soev_pipeline view", "dg dev", "dagster_webserver"):
        assert one in commands
    log = ui.log.read_text()
    assert "superseded" not in log.lower(), log  # `dagster dev` is; `dg dev` runs the UI


def test_each_listed_project_links_to_its_own_viewer_and_sigterm_to_make_stops_all(
    tmp_path: Path, system: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    listing = tmp_path / "projects.yaml"
    listing.write_text(
        "projects:\n  wet: wet/project.yaml\n"
        "  huur:\n    project: huur/project.yaml\n    runs_dir: archive/huur\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("SOEV_PROJECTS", str(listing))
    runs = {"wet": "wet-r1", "huur": "huur-r1"}
    for name, run_id in runs.items():
        project = write_project(tmp_path / name, system.url)
        assert main(["run", "--project", str(project), "--split", "dev", "--run-id", run_id]) == 0

    port = _free_port()
    venv = Path(sys.executable).parents[1]  # `make ui` with this environment, not installing it
    command = ["make", "--no-print-directory", f"VENV={venv}", "-o", f"{venv}/.installed", "ui"]
    env = _env(tmp_path, SOEV_PROJECTS=str(listing), DAGSTER_WEBSERVER_PORT=str(port))
    with started(command, env, tmp_path / "ui.log", port) as ui:
        # the environment of the code servers: the runs they execute make the links
        servers = [environ for command, environ in ui.processes().values() if "api grpc" in command]
        assert servers, ui.processes()
        for environ in servers:
            server_env = dict(item.partition("=")[::2] for item in environ.decode().split("\0"))
            for name, run_id in runs.items():
                with monkeypatch.context() as patch:
                    patch.setattr(os, "environ", server_env)
                    link = view_url(name)
                assert link is not None, f"no viewer address for {name}"
                status, page = _get(f"{link}/runs/{run_id}")
                assert status == 200, f"{link}/runs/{run_id} answered {status}"
                assert run_id in page
        left = ui.left_after(signal.SIGTERM, group=False)
    assert left == [], ui.tail()
