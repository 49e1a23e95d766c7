"""docs/extending.md, "A hooks module", run: the project of its blocks loaded, graded and run.

The guide's new built-in kind and its provider package are followed in a copy of the
repository by tests/test_extending_guide.py and tests/test_extending_runtime.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.core import CriterionContext, Evidence
from soev_pipeline.criteria import Builtin
from soev_pipeline.project import LoadedProject, load
from tests.support import builders
from tests.support.cli import invoke
from tests.support.guide import steps, write
from tests.support.project import edit_yaml
from tests.support.thread_api import FakeThreadAPI, Reply

DISCLAIMER = "De termijn is zes weken (art. 6:7 Awb). Dit is geen juridisch advies."


def _hooks_project(folder: Path, base_url: str = "http://127.0.0.1:9/") -> Path:
    """The guide's project `wetwijzer/`, its files written as the guide says, in `folder`."""
    for step in steps():
        if step.target.startswith("wetwijzer/"):
            write(step, folder)
    path = folder / "wetwijzer" / "project.yaml"
    edit_yaml(path, lambda data: data["system"].update(base_url=base_url))
    return path


def _grade(loaded: LoadedProject, case_id: str, reply_text: str) -> list[tuple[str, str]]:
    case = next(case for case in loaded.cases() if case.id == case_id)
    evidence = builders.make_evidence(reply_text)
    evidence = Evidence.model_validate({**evidence.model_dump(), "case_id": case_id})

    async def grade() -> list[tuple[str, str]]:
        verdicts = [
            await loaded.registry.evaluate(
                spec, case, evidence, CriterionContext(), loaded.params[(case.id, index)]
            )
            for index, spec in enumerate(case.criteria)
        ]
        return [(verdict.status, verdict.detail) for verdict in verdicts]

    return asyncio.run(grade())


def test_the_guides_hooks_module_adds_its_kind_and_setup(tmp_path: Path) -> None:
    loaded = load(_hooks_project(tmp_path))

    kind = loaded.registry.get("wetwijzer.disclaimer")
    assert isinstance(kind, Builtin) and kind.needs == frozenset()
    assert "wetwijzer.disclaimer" in loaded.registry.forkable(detector_forks=False)
    assert _grade(loaded, "kern-001", DISCLAIMER) == [("pass", "ends with the disclaimer")]
    assert _grade(loaded, "kern-002", "Bel ons. Raadpleeg een advocaat.") == [
        ("fail", "does not end with 'Dit is geen juridisch advies.'"),
        ("pass", "ends with the disclaimer"),
    ]
    assert _grade(loaded, "kern-001", "")[0][0] == "fail"

    async def fields(case_id: str) -> dict[str, Any]:
        case = next(case for case in loaded.cases() if case.id == case_id)
        assert loaded.setup is not None
        async with loaded.setup(case) as given:
            return dict(given)

    assert asyncio.run(fields("kern-001")) == {"knowledge": ["kb-awb"]}
    assert asyncio.run(fields("kern-002")) == {}


@pytest.mark.e2e
def test_soev_evals_run_uses_the_guides_hooks_module(tmp_path: Path) -> None:
    with FakeThreadAPI(lambda text, history: Reply(DISCLAIMER)) as system:
        path = _hooks_project(tmp_path / "project", system.url)
        runs = tmp_path / "runs"
        ran = invoke("run", "--project", path, "--runs-dir", runs, "--run-id", "gids")
        assert ran.status == 0, ran.text
    inputs = {body["input"]["text"]: body["input"] for body in map(_json, system.routed("open"))}
    assert inputs["Binnen welke termijn moet ik bezwaar maken?"]["knowledge"] == ["kb-awb"]
    assert "knowledge" not in inputs["Wat zegt de Grondwet over privacy?"]
    report = invoke("report", "gids", "--json", "--project", path, "--runs-dir", runs).json()
    assert report["criteria"]["wetwijzer.disclaimer"] == {
        "pass": 2,
        "fail": 1,
        "error": 0,
        "not_applicable": 0,
    }


def _json(request: Any) -> dict[str, Any]:
    body: dict[str, Any] = request.json()
    return body
