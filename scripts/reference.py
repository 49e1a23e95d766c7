"""Start the bundled reference assistant in a child process on a free 127.0.0.1 port."""

from __future__ import annotations

import select
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def port_is_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:`port`."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@contextmanager
def reference_assistant(*options: str, port: int = 0) -> Iterator[str]:
    """Run `soev-evals serve-reference` on `port` (0: a free one); yield its URL; stop it.

    The assistant runs in a session of its own: Ctrl-C in the terminal stops it through
    this function (SIGTERM), not in the middle of a connection.
    """
    command: Sequence[str] = [
        sys.executable,
        "-m",
        "soev_pipeline",
        "serve-reference",
        "--port",
        str(port),
        *options,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30)
        url = process.stdout.readline().strip() if ready else "nothing in 30 s"
        if not url.startswith("http://"):
            raise SystemExit(f"the reference assistant did not start (it printed {url!r})")
        yield url
    finally:
        _stop(process)


@contextmanager
def viewer(project: Path, runs: Path, env: dict[str, str], port: int = 0) -> Iterator[str]:
    """Run `soev-evals view` of `project` with its runs in `runs` on `port` (0: a free one);
    yield its base URL; stop it. Its first line of output is `soev-evals view of 'name': URL`."""
    command = [sys.executable, "-m", "soev_pipeline", "view", "--project", str(project)]
    command += ["--runs-dir", str(runs), "--port", str(port)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline().strip() if ready else "nothing in 60 s"
        url = line.rpartition(": ")[2]
        if not url.startswith("http://"):
            raise SystemExit(f"the viewer did not start (it printed {line!r})")
        yield url.rstrip("/")
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL when it has not ended in 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
