"""`soev-evals` as the e2e tests call it: in process (`soev_pipeline.cli.main`) or as
`python -m soev_pipeline`, with what it printed and its exit status."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.project import SECRET, TEST_IDS


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self) -> Any:
        return json.loads(self.out)

    def error_line(self) -> str:
        """The one line of the error message on stderr (asserting that there is one)."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one line on stderr, got:\n{self.err}"
        assert "Traceback" not in self.text
        return lines[0]

    def assert_no_test_content(self) -> None:
        assert SECRET not in self.text
        for case_id in TEST_IDS:
            assert case_id not in self.text


def invoke(*args: object) -> Result:
    """Call `soev_pipeline.cli.main` with these arguments; a usage error gives its status."""
    from soev_pipeline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return Result(status, out.getvalue(), err.getvalue())


def run_module(*args: object, cwd: Path | None = None) -> Result:
    """`python -m soev_pipeline ARGS` in a subprocess with this process's environment."""
    done = subprocess.run(
        [sys.executable, "-m", "soev_pipeline", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=120,
    )
    return Result(done.returncode, done.stdout, done.stderr)
