"""docs/extending.md, run: the new kind of its guide added to the reply family, and the
hooks module of its example loaded as a project's."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from soev_pipeline.core import CriterionContext, Evidence
from soev_pipeline.criteria import Builtin, builtin_registry, reply
from soev_pipeline.project import LoadedProject, load
from tests.criteria import test_builtins
from tests.support import builders
from tests.support.cli import invoke
from tests.support.thread_api import FakeThreadAPI, Reply

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "extending.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DISCLAIMER = "De termijn is zes weken (art. 6:7 Awb). Dit is geen juridisch advies."


def _blocks(section: str, language: str) -> list[str]:
    """The code blocks in `language` of the `## section` of the guide, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end >= 0 else len(text)]
    return [code for lang, code in BLOCK.findall(body) if lang == language]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "criteria_table", REPO / "scripts" / "criteria_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def added(monkeypatch: pytest.MonkeyPatch) -> Builtin[Any]:
    """The guide's kind, its code run in the reply module's namespace as if written there."""
    code, entry, _ = _blocks("A new criterion kind", "python")
    namespace = dict(vars(reply))
    exec(code + "\n" + entry, namespace)
    (kind,) = [kind for kind in namespace["KINDS"] if kind is not Ellipsis]
    monkeypatch.setattr(reply, "KINDS", [*reply.KINDS, kind])
    return kind  # type: ignore[no-any-return]


def test_the_guides_kind_joins_the_registry_with_its_traits(added: Builtin[Any]) -> None:
    registry = builtin_registry()
    assert registry.get("reply.max_sentences") is added
    assert added.needs == frozenset() and not added.needs_judge
    assert "reply.max_sentences" in registry.forkable(detector_forks=False)


def test_the_guides_tests_pass(added: Builtin[Any]) -> None:
    (tests,) = _blocks("A new criterion kind", "python")[2:]
    namespace = dict(vars(builders))
    exec(tests, namespace)
    names = [name for name in namespace if name.startswith("test_max_sentences")]
    assert len(names) == 3
    for name in names:
        namespace[name]()


def test_the_checks_of_every_builtin_kind_cover_the_guides_kind(added: Builtin[Any]) -> None:
    """What the guide says a new kind gets from tests/criteria/test_builtins.py for free."""
    test_builtins.test_each_example_validates_against_its_kind("reply.max_sentences")
    test_builtins.test_each_kind_describes_itself("reply.max_sentences")
    test_builtins.test_each_kind_refuses_an_unknown_parameter("reply.max_sentences")


def test_make_docs_adds_the_guides_kind_to_the_table(added: Builtin[Any]) -> None:
    script = _script()
    page = (REPO / "docs" / "criteria.md").read_text(encoding="utf-8")
    regenerated = script.replaced(page, script.render())
    assert regenerated != page  # the committed table lacks it: the docs test fails until then
    row = (
        "| `reply.max_sentences` | — | the reply has at most `max` sentences "
        "| `max` (required) | `{kind: reply.max_sentences, max: 4}` |"
    )
    assert row in regenerated.splitlines()


def _hooks_project(folder: Path, base_url: str = "http://127.0.0.1:9/") -> Path:
    """A project of the guide's hooks module and suite file."""
    (hooks,) = _blocks("A hooks module", "python")
    (suite,) = _blocks("A hooks module", "yaml")
    (folder / "suites").mkdir(parents=True)
    (folder / "hooks.py").write_text(hooks, encoding="utf-8")
    (folder / "suites" / "kern.yaml").write_text(suite, encoding="utf-8")
    project = {
        "name": "wetwijzer",
        "system": {"base_url": base_url},
        "suites": [{"name": "kern", "files": "suites/*.yaml"}],
        "hooks": "hooks",
    }
    path = folder / "project.yaml"
    path.write_text(yaml.safe_dump(project), encoding="utf-8")
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
