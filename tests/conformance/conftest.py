"""Fixtures of the conformance tests: a project as SPEC.md shows it, its fake system and judge,
and the CLI called in-process (`soev_pipeline.cli.main`) or as a subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.support import (
    SECRET,
    TEST_IDS,
    FakeChatServer,
    FakeThreadSystem,
    write_project,
)


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


CLI = Callable[..., Result]


ENVIRONMENT = {"SOEV_API_KEY": "systeem-token", "JUDGE_API_KEY": "judge-token"}


@pytest.fixture(scope="session")
def shared_dagster_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Dagster instance for the session: a fresh one costs a second to create."""
    return tmp_path_factory.mktemp("dagster-home")


@pytest.fixture(autouse=True)
def _environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_dagster_home: Path
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(shared_dagster_home))
    (tmp_path / "dagster-home").mkdir(exist_ok=True)
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


def invoke(*args: object) -> Result:
    """Call `soev_pipeline.cli.main` with string arguments; usage errors give their status."""
    from soev_pipeline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return Result(status, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> CLI:
    return invoke


def run_module(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
    """`python -m soev_pipeline ARGS` in a subprocess."""
    done = subprocess.run(
        [sys.executable, "-m", "soev_pipeline", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def system() -> Iterator[FakeThreadSystem]:
    with FakeThreadSystem() as running:
        yield running


@pytest.fixture
def judge() -> Iterator[FakeChatServer]:
    with FakeChatServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, system: FakeThreadSystem, judge: FakeChatServer) -> Path:
    """The whole project of SPEC.md sections 2-4, against the fake system and judge."""
    return write_project(tmp_path / "wetwijzer", system.url, judge.url)


@pytest.fixture
def ran(project: Path, cli: CLI) -> Path:
    """The project after `run --run-id r1`; returns the run folder."""
    result = cli("run", "--project", project, "--run-id", "r1")
    assert result.status == 0, result.err
    return project.parent / "runs" / "r1"


@dataclass
class Baseline:
    """One run of the whole project, shared by the tests that only read it."""

    project: Path
    run: Path
    system: FakeThreadSystem
    judge: FakeChatServer
    printed: Result
    report: Result


@pytest.fixture(scope="session")
def baseline(
    tmp_path_factory: pytest.TempPathFactory, shared_dagster_home: Path
) -> Iterator[Baseline]:
    with FakeThreadSystem() as system, FakeChatServer() as judge:
        project = write_project(
            tmp_path_factory.mktemp("baseline") / "wetwijzer", system.url, judge.url
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DAGSTER_HOME", str(shared_dagster_home))
            for name, value in ENVIRONMENT.items():
                patch.setenv(name, value)
            printed = invoke("run", "--project", project, "--run-id", "r1", "--k", "2")
            assert printed.status == 0, printed.err
            report = invoke("report", "r1", "--json", "--project", project)
            assert report.status == 0, report.err
        yield Baseline(project, project.parent / "runs" / "r1", system, judge, printed, report)
