"""`make ui` as a person runs it: the Dagster UI answers, and Ctrl-C (SIGINT to the process
group) leaves no process behind.

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

pytestmark = [
    pytest.mark.e2e,
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
    assert left == []
    assert ui.process.returncode == 0
    for one in ("serve-reference", "soev_pipeline view", "dg dev", "dagster_webserver"):
        assert one in commands
    log = ui.log.read_text()
    assert "superseded" not in log.lower(), log  # `dagster dev` is; `dg dev` runs the UI
