"""Runtime providers through the CLI (the cli reference, RuntimeProvider and RuntimeBindings):
an entry point in the group soev.evals.runtimes, written as the reference's example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conformance.conftest import CLI
from tests.conformance.support import FakeChatServer, FakeThreadSystem, edit_yaml, snapshot

RUNTIME_MODULE = '''\
"""The RuntimeProvider example of the cli reference, with the JudgeLLM example adapter."""

import os
from collections.abc import Mapping
from contextlib import asynccontextmanager

import httpx
from pydantic import JsonValue

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.cli import RuntimeBindings
from soev_pipeline.core import JudgeError
from soev_pipeline.judges import LLMJudge, load_prompts


def log(event):
    with open(os.environ["RUNTIME_LOG"], "a") as stream:
        stream.write(event + "\\n")


class ChatCompletionsLLM:
    context_window = 128_000

    def __init__(self, client: httpx.AsyncClient, model: str) -> None:
        self._client = client
        self._model = model

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        if os.environ.get("RUNTIME_MODE") == "crash":
            raise RuntimeError("adapter bug")
        schema_format = {"name": "verdict", "schema": dict(schema)}
        body = {
            "model": self._model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": schema_format},
        }
        try:
            response = await self._client.post("chat/completions", json=body)
            response.raise_for_status()
            return response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            raise JudgeError(f"judge call failed: {type(exc).__name__}") from exc


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
            mode = os.environ.get("RUNTIME_MODE")
            setup = runtime_setup if mode == "setup" else None
            judge = None if mode == "nojudge" else LLMJudge(llm, load_prompts())
            if mode == "noarm":
                arm = None
            yield RuntimeBindings(arm=arm, judge=judge, setup=setup)
        log("closed")
'''


def register(folder: Path, distribution: str, module: str, entries: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    info = folder / f"{distribution}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[soev.evals.runtimes]\n{lines}")
    (folder / f"{module}.py").write_text(RUNTIME_MODULE)


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: FakeChatServer) -> Path:
    """Register the entry point `mine`; returns the log of the provider's opens."""
    folder = tmp_path / "site"
    register(
        folder,
        "conformance_runtime",
        "conformance_runtime_mod",
        {"mine": "conformance_runtime_mod:Runtime"},
    )
    monkeypatch.syspath_prepend(str(folder))
    log = tmp_path / "runtime.log"
    log.write_text("")
    monkeypatch.setenv("RUNTIME_LOG", str(log))
    monkeypatch.setenv("RUNTIME_JUDGE_URL", judge.url)
    return log


def opened(log: Path) -> list[str]:
    return log.read_text().split()


def test_run_and_rescore_with_a_runtime_entry_point(
    project: Path, runtime: Path, cli: CLI, system: FakeThreadSystem, judge: FakeChatServer
) -> None:
    args = ("--project", project, "--runtime", "mine")
    result = cli("run", *args, "--run-id", "r1")
    assert result.status == 0, result.err
    assert set(opened(runtime)) == {"run", "closed"}
    assert judge.bodies and all(body["model"] == "my-judge-model" for body in judge.bodies)
    manifest = json.loads((project.parent / "runs" / "r1" / "manifest.json").read_text())
    assert manifest["runtime"] == "mine"
    for request in system.opens():
        assert request.body["input"]["knowledge"] == ["wetwijzer"]  # no setup: the hooks' SETUP
    requests = len(system.requests)
    runtime.write_text("")
    assert cli("rescore", "r1", *args).status == 0
    assert opened(runtime) == ["rescore", "closed"]
    assert len(system.requests) == requests


def test_the_provider_is_opened_once_per_command(project: Path, runtime: Path, cli: CLI) -> None:
    args = ("--project", project, "--runtime", "mine", "--suite", "privacy")
    assert cli("run", *args, "--run-id", "r1").status == 0
    assert opened(runtime) == ["run", "closed"]


def test_an_offline_rescore_opens_no_provider(
    project: Path, runtime: Path, cli: CLI, judge: FakeChatServer
) -> None:
    args = ("--project", project, "--runtime", "mine")
    assert cli("run", *args, "--run-id", "r1", "--suite", "privacy").status == 0
    calls = len(judge.bodies)
    runtime.write_text("")
    assert cli("rescore", "r1", "--offline", *args).status == 0
    assert opened(runtime) == []
    assert len(judge.bodies) == calls


def test_the_project_setting_selects_the_runtime(project: Path, runtime: Path, cli: CLI) -> None:
    edit_yaml(project, lambda d: d.update(runtime="mine"))
    assert cli("run", "--project", project, "--run-id", "r1", "--suite", "privacy").status == 0
    assert "run" in opened(runtime)


def test_a_runtime_setup_replaces_the_hooks_setup(
    project: Path,
    runtime: Path,
    cli: CLI,
    system: FakeThreadSystem,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUNTIME_MODE", "setup")
    args = ("--project", project, "--runtime", "mine", "--suite", "privacy")
    assert cli("run", *args, "--run-id", "r1").status == 0
    for request in system.opens():
        assert request.body["input"]["bron"] == "runtime"
        assert "knowledge" not in request.body["input"]


def test_a_runtime_without_a_judge_gives_error_verdicts(
    project: Path, runtime: Path, cli: CLI, judge: FakeChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_MODE", "nojudge")
    args = ("--project", project, "--runtime", "mine", "--suite", "privacy", "--split", "dev")
    assert cli("run", *args, "--run-id", "r1").status == 0
    assert judge.bodies == []
    data = cli("report", "r1", "--json", "--project", project).json()
    assert data["criteria"]["behaviour.expected"]["error"] == 1


def test_a_run_whose_runtime_gives_no_arm_is_a_one_line_error(
    project: Path, runtime: Path, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_MODE", "noarm")
    result = cli("run", "--project", project, "--runtime", "mine", "--run-id", "r1")
    assert result.status == 1
    result.error_line()


def test_an_unknown_runtime_is_a_one_line_error(project: Path, runtime: Path, cli: CLI) -> None:
    result = cli("run", "--project", project, "--runtime", "nergens", "--run-id", "r1")
    assert result.status == 1
    assert "nergens" in result.error_line()
    rescore = cli("rescore", "r1", "--project", project, "--runtime", "nergens")
    assert rescore.status == 1
    rescore.error_line()


def test_two_entry_points_of_one_name_are_an_error(
    project: Path, runtime: Path, cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "site2"
    register(other, "other_runtime", "other_runtime_mod", {"mine": "other_runtime_mod:Runtime"})
    monkeypatch.syspath_prepend(str(other))
    result = cli("run", "--project", project, "--runtime", "mine", "--run-id", "r1")
    assert result.status == 1
    assert "mine" in result.error_line()
    assert opened(runtime) == []


def test_an_adapter_exception_other_than_judge_error_stops_the_run(
    project: Path, runtime: Path, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME_MODE", "crash")
    args = ("--project", project, "--runtime", "mine", "--suite", "privacy", "--split", "dev")
    result = cli("run", *args, "--run-id", "r1")
    assert result.status != 0


def test_an_adapter_exception_keeps_the_archived_evidence(
    project: Path, runtime: Path, cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("--project", project, "--runtime", "mine", "--suite", "privacy", "--split", "dev")
    assert cli("run", *args, "--run-id", "r1").status == 0
    run = project.parent / "runs" / "r1"
    before = snapshot(run)
    monkeypatch.setenv("RUNTIME_MODE", "crash")
    result = cli("rescore", "r1", *args[:4])
    assert "Traceback" not in result.text
    after = snapshot(run)
    for name, content in before.items():
        assert after[name] == content
