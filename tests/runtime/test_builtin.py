"""The built-in runtime provider: an arm for a run only, and the project's judge if it has one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from soev_pipeline.arms import SoevThreadArm
from soev_pipeline.cli import load
from soev_pipeline.core.errors import ArmError
from soev_pipeline.judges import LLMJudge
from soev_pipeline.runtime import BuiltinRuntime, Operation, RuntimeBindings, check_reachable
from tests.support.project import write_project
from tests.support.thread_api import FakeThreadAPI

NOWHERE = "http://127.0.0.1:9/"


def bindings(project: Path, operation: Operation) -> RuntimeBindings:
    async def main() -> RuntimeBindings:
        async with BuiltinRuntime(project.parent / ".soev").open(
            load(project), operation=operation
        ) as opened:
            return opened

    return asyncio.run(main())


@pytest.fixture(autouse=True)
def _tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOEV_API_KEY", "systeem-token")
    monkeypatch.setenv("JUDGE_API_KEY", "judge-token")
    monkeypatch.setenv("TENANT_ID", "gemeente-x")


def test_a_run_gets_the_arm_of_the_system_and_the_judge(tmp_path: Path) -> None:
    with FakeThreadAPI() as system:
        opened = bindings(write_project(tmp_path, system.url, NOWHERE + "v1/"), "run")
    assert isinstance(opened.arm, SoevThreadArm)
    assert isinstance(opened.judge, LLMJudge)
    assert (opened.language_detector, opened.setup, opened.tracker) == (None, None, None)


def test_a_run_of_an_unreachable_system_fails_before_anything_opens(tmp_path: Path) -> None:
    project = write_project(tmp_path, NOWHERE)
    with pytest.raises(ArmError, match=f"{project}: system.base_url: cannot reach"):
        bindings(project, "run")


def test_a_rescore_gets_no_arm_and_a_project_without_judge_no_judge(tmp_path: Path) -> None:
    opened = bindings(write_project(tmp_path, NOWHERE), "rescore")
    assert (opened.arm, opened.judge) == (None, None)


def test_check_reachable_names_the_project_file_and_the_url(tmp_path: Path) -> None:
    project = write_project(tmp_path, NOWHERE)
    with pytest.raises(ArmError) as raised:
        check_reachable(load(project))
    assert f"{project}: system.base_url: cannot reach {NOWHERE}" in str(raised.value)
    with FakeThreadAPI() as system:
        check_reachable(load(write_project(tmp_path / "up", system.url)))
