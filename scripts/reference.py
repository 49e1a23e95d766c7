"""Start the bundled reference assistant in a child process on a free 127.0.0.1 port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def reference_assistant(*options: str) -> Iterator[str]:
    """Run `soev-evals serve-reference` on a free port; yield its URL; stop it afterwards."""
    command: Sequence[str] = [
        sys.executable,
        "-m",
        "soev_pipeline",
        "serve-reference",
        "--port",
        "0",
        *options,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"the reference assistant did not start (it printed {url!r})")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
