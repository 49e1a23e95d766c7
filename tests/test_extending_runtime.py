"""docs/extending.md, "A runtime provider package", run: the package of its blocks built and
installed with pip, then `soev-evals run` and `rescore` with `--runtime mine` on a project
with a judge, whose judge kinds it grades with the project's judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import write_project
from tests.support.chat_completions import FakeChatCompletions
from tests.support.cli import invoke
from tests.support.guide import install, steps, write
from tests.support.project import edit_yaml
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e


def _judged(run: Path) -> dict[str, tuple[str, str]]:
    """The status and detail of `behaviour.expected` of each case of the latest scoring."""
    scoring = sorted((run / "scorings").iterdir())[-1]
    graded = map(json.loads, (scoring / "verdicts.jsonl").read_text(encoding="utf-8").splitlines())
    return {
        attempt["case_id"]: (verdict["status"], verdict["detail"])
        for attempt in graded
        for verdict in attempt["verdicts"]
        if verdict["kind"] == "behaviour.expected"
    }


def test_the_guides_runtime_provider_runs_and_rescores_with_the_projects_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: FakeThreadAPI
) -> None:
    for step in steps():
        if step.target.startswith("my-runtime/"):
            write(step, tmp_path)
    install(tmp_path / "my-runtime", tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))

    with FakeChatCompletions() as judge:
        project = write_project(
            tmp_path / "p", system.url, judge={"base_url": judge.url, "model": "m"}
        )
        suite = project.parent / "suites" / "kern" / "kern.yaml"
        edit_yaml(suite, lambda data: data["criteria"].append({"kind": "behaviour.expected"}))
        ran = invoke("run", "--project", project, "--runtime", "mine", "--run-id", "r1")
        assert ran.status == 0, ran.err
        assert system.texts  # the arm of the provider reached the assistant
        assert judge.calls  # the judge of the provider is the project's
        judged = _judged(project.parent / "runs" / "r1")
        assert judged == {
            "kern-001": ("pass", "judged 'answer', expected 'answer': fine"),
            "kern-002": ("pass", "judged 'answer', expected 'answer': fine"),
            "kern-003": ("error", "the attempt has no final reply to label"),  # a failed turn
            "kern-t01": ("pass", "judged 'answer', expected 'answer': fine"),
        }

        published = project.parent / ".soev" / "published" / "r1.json"
        report = json.loads(published.read_text(encoding="utf-8"))  # state_dir was given
        assert report["run_id"] == "r1" and {c["split"] for c in report["cases"]} == {"dev"}
        manifest = json.loads((project.parent / "runs" / "r1" / "manifest.json").read_text())
        assert manifest["runtime"] == "mine"

        attempts = len(system.requests)
        assert invoke("rescore", "r1", "--project", project, "--runtime", "mine").status == 0
        assert len(system.requests) == attempts  # a rescore asks the assistant nothing
        assert _judged(project.parent / "runs" / "r1") == judged
