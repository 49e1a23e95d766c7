"""Runtime providers through the CLI (docs/extending.md#a-runtime-provider-package): an entry
point in the group soev.evals.runtimes, written as the example there, and each way it can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.chat_completions import FakeChatCompletions
from tests.support.cli import invoke
from tests.support.project import edit_yaml, snapshot
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e

RUNTIME_MODULE = '''\
"""A runtime provider as docs/extending.md writes one, with a JudgeLLM adapter of its own."""

import os
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.cli import RuntimeBindings
from soev_pipeline.judges import LLMJudge, load_prompts
from tests.support.judge_llm import ExampleJudgeLLM
from tests.support.tracker import RecordingTracker


def log(event):
    with open(os.environ["RUNTIME_LOG"], "a") as stream:
        stream.write(event + "\\n")


class ChatCompletionsLLM(ExampleJudgeLLM):
    async def complete(self, **prompt):
        if os.environ.get("RUNTIME_MODE") == "crash":
            raise RuntimeError("adapter bug")
        return await super().complete(**prompt)


@asynccontextmanager
async def runtime_setup(case):
    yield {"bron": "runtime"}


class Runtime:
    @asynccontextmanager
    async def open(self, loaded, *, operation):
        log(operation)
        judge_url = os.environ["RUNTIME_JUDGE_URL"]
        async with create_http_client(loaded.project.system) as http, httpx.AsyncClient(
            base_url=judge_url
        ) as judge_http:
            system, citations = loaded.project.system, loaded.project.citations
            arm = SoevThreadArm(http, system, citations) if operation == "run" else None
            llm = ChatCompletionsLLM(judge_http, "my-judge-model")
            if os.environ.get("RUNTIME_MODE") == "noarm":
                arm = None
            judge = LLMJudge(llm, load_prompts())
            tracker = RecordingTracker(Path(os.environ["RUNTIME_PUBLISHED"]))
            yield RuntimeBindings(arm=arm, judge=judge, setup=runtime_setup, tracker=tracker)
        log("closed")
'''


def register(folder: Path, distribution: str, module: str, name: str) -> None:
    """Install a distribution with the runtime entry point `name` into `folder`."""
    info = folder / f"{distribution}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[soev.evals.runtimes]\n{name} = {module}:Runtime\n")
    (folder / f"{module}.py").write_text(RUNTIME_MODULE)


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: FakeChatCompletions) -> Path:
    """Register the entry point `mine`; returns the log of the provider's opens."""
    register(tmp_path / "site", "conformance_runtime", "conformance_runtime_mod", "mine")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    log = tmp_path / "runtime.log"
    log.write_text("")
    monkeypatch.setenv("RUNTIME_LOG", str(log))
    monkeypatch.setenv("RUNTIME_PUBLISHED", str(tmp_path / "published.jsonl"))
    monkeypatch.setenv("RUNTIME_JUDGE_URL", judge.url)
    return log


def opened(log: Path) -> list[str]:
    return log.read_text().split()


def test_run_and_rescore_with_the_runtime_the_project_names(
    copy: Path, runtime: Path, system: FakeThreadAPI, judge: FakeChatCompletions
) -> None:
    edit_yaml(copy, lambda data: data.update(runtime="mine"))
    assert system.requests == []
    result = invoke("run", "--project", copy, "--run-id", "t1", "--split", "dev")
    assert result.status == 0, result.err
    assert opened(runtime) == ["run", "closed"]  # once for the whole command
    assert judge.bodies and all(body["model"] == "my-judge-model" for body in judge.bodies)
    for request in system.routed("open"):
        fields = request.json()["input"]
        assert fields["bron"] == "runtime" and "knowledge" not in fields  # not the hooks' SETUP
    run = copy.parent / "runs" / "t1"
    assert json.loads((run / "manifest.json").read_text())["runtime"] == "mine"
    (published,) = map(json.loads, (runtime.parent / "published.jsonl").read_text().splitlines())
    assert published["manifest"]["run_id"] == "t1" and "cases" not in published["manifest"]
    assert {case["split"] for case in published["report"]["cases"]} == {"dev"}

    runtime.write_text("")
    requests = len(system.requests)
    assert invoke("rescore", "t1", "--project", copy).status == 0
    assert opened(runtime) == ["rescore", "closed"]
    assert len(system.requests) == requests


def test_an_unknown_runtime_is_one_line_naming_it(copy: Path, runtime: Path) -> None:
    result = invoke("run", "--project", copy, "--runtime", "nergens", "--run-id", "r1")
    assert result.status == 1
    assert "nergens" in result.error_line()


def test_two_entry_points_of_one_name_are_one_line(
    copy: Path, runtime: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(tmp_path / "site2", "other_runtime", "other_runtime_mod", "mine")
    monkeypatch.syspath_prepend(str(tmp_path / "site2"))
    result = invoke("run", "--project", copy, "--runtime", "mine", "--run-id", "r1")
    assert result.status == 1
    assert "mine" in result.error_line()
    assert opened(runtime) == []


def test_a_runtime_without_an_arm_stops_a_run_with_one_line(
    copy: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_MODE", "noarm")
    result = invoke("run", "--project", copy, "--runtime", "mine", "--run-id", "r1")
    assert result.status == 1
    result.error_line()


def test_an_adapter_that_crashes_stops_a_rescore_and_keeps_the_evidence(
    copy: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception other than JudgeError is a bug of the adapter: no verdict hides it."""
    run = copy.parent / "runs" / "b1"
    before = snapshot(run)
    monkeypatch.setenv("RUNTIME_MODE", "crash")
    result = invoke("rescore", "b1", "--project", copy, "--runtime", "mine")
    assert result.status == 1
    assert "Traceback" not in result.text
    after = snapshot(run)
    assert {name: after[name] for name in before} == before
