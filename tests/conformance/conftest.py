"""The black-box tests: `soev-evals` against the fakes of tests/support, one path per page of
docs/ that describes what a user sees, and every class of bad input.

Running a command costs seconds, so the one full run, `baseline`, is shared by every test
that only reads it, and a test that must change a project works on a `copy` of it, finished
run and judge cache included, with a system and a judge of its own. The baseline has a
Dagster instance of its own; the other commands use the session's.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_completions import FakeChatCompletions
from tests.support.cli import Result, invoke
from tests.support.project import SECRET, edit_yaml, legal_answer, write_project
from tests.support.thread_api import FakeThreadAPI, Reply

ENVIRONMENT = {
    "SOEV_API_KEY": "systeem-token",
    "JUDGE_API_KEY": "judge-token",
    "TENANT_ID": "gemeente-x",
}


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


def forgetful(text: str, history: list[str]) -> Reply:
    """The assistant of the earlier run: it knew nothing about the test cases."""
    return Reply("Geen idee.") if SECRET in text else legal_answer(text, history)


@dataclass
class Baseline:
    """The full project after `run --run-id b0`, `run --run-id b1 --k 2` and `rescore b1`, in
    a Dagster instance of its own, with what its system and judge were asked."""

    project: Path
    home: Path
    """Its Dagster instance."""
    system: FakeThreadAPI
    judge: FakeChatCompletions
    printed: Result
    """What `run b1` printed."""
    first: Result
    """`report b1 --json` before the rescore."""
    asked: tuple[int, int]
    """How many requests the system and the judge had had before the rescore."""
    rescored: Result
    report: Result
    """`report b1 --json` after the rescore."""
    text: Result
    """`report b1` after the rescore."""

    @property
    def run(self) -> Path:
        return self.project.parent / "runs" / "b1"


@pytest.fixture(scope="session")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Baseline]:
    root = tmp_path_factory.mktemp("baseline")
    with (
        FakeThreadAPI(forgetful, token=ENVIRONMENT["SOEV_API_KEY"]) as system,
        FakeChatCompletions() as judge,
        pytest.MonkeyPatch.context() as patch,
    ):
        for name, value in {**ENVIRONMENT, "DAGSTER_HOME": str(root / "dagster")}.items():
            patch.setenv(name, value)
        project = write_project(root / "p", system.url, judge.url)
        args = ("--project", project)
        assert invoke("run", *args, "--run-id", "b0").status == 0
        system.script = legal_answer
        printed = invoke("run", *args, "--run-id", "b1", "--k", "2")
        assert printed.status == 0, printed.err
        first = invoke("report", "b1", "--json", *args)
        asked = (len(system.requests), len(judge.requests))
        rescored = invoke("rescore", "b1", *args)
        assert rescored.status == 0, rescored.err
        report = invoke("report", "b1", "--json", *args)
        text = invoke("report", "b1", *args)
    yield Baseline(
        project, root / "dagster", system, judge, printed, first, asked, rescored, report, text
    )


@pytest.fixture
def system() -> Iterator[FakeThreadAPI]:
    """The system under test of a `copy`."""
    with FakeThreadAPI(legal_answer, token=ENVIRONMENT["SOEV_API_KEY"]) as running:
        yield running


@pytest.fixture
def judge() -> Iterator[FakeChatCompletions]:
    """The judge of a `copy`."""
    with FakeChatCompletions() as running:
        yield running


@pytest.fixture
def copy(
    baseline: Baseline, tmp_path: Path, system: FakeThreadAPI, judge: FakeChatCompletions
) -> Path:
    """A copy of the baseline project with its runs and judge cache, speaking to `system`
    and `judge`; returns its project.yaml."""
    shutil.copytree(baseline.project.parent, tmp_path / "p")
    project = tmp_path / "p" / "project.yaml"

    def point(data: dict[str, Any]) -> None:
        data["system"]["base_url"], data["judge"]["base_url"] = system.url, judge.url

    edit_yaml(project, point)
    return project
