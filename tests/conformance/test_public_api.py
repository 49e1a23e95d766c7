"""Every public name of the references lives at soev_pipeline.X with the documented signature."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

NAMES = {
    "cli": [
        "load",
        "LoadedProject",
        "SealChangedError",
        "RuntimeProvider",
        "RuntimeBindings",
        "main",
    ],
    "criteria": [
        "builtin_registry",
        "Builtin",
        "Evaluator",
        "NoParams",
        "outcome",
        "error",
        "not_applicable",
        "judge_label",
    ],
    "judges": ["LLMJudge", "JudgeLLM", "load_prompts", "prompt_shas", "LangidDetector"],
    "core": ["Case", "CriterionContext", "Evidence", "FrozenModel", "Verdict", "JudgeError"],
    "arms": ["SoevThreadArm", "create_http_client"],
    "run": ["build_manifest"],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in NAMES.items() for name in names]
)
def test_the_name_is_importable(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(f"soev_pipeline.{module}"), name)


def keyword_defaults(function: object) -> dict[str, object]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


def test_load_signature() -> None:
    from soev_pipeline.cli import load

    parameters = inspect.signature(load).parameters
    assert next(iter(parameters)) == "path"
    defaults = keyword_defaults(load)
    assert defaults["definitions"] is True
    assert defaults["suite_files"] is True
    assert defaults["allow_test_additions"] is False
    assert defaults["project"] is None


def test_loaded_project_fields(tmp_path: Path) -> None:
    from soev_pipeline.cli import LoadedProject

    assert dataclasses.is_dataclass(LoadedProject)
    names = [field.name for field in dataclasses.fields(LoadedProject)]
    assert names[:6] == ["path", "project", "registry", "suites", "setup", "context"]


def test_verdict_helpers_signatures() -> None:
    from soev_pipeline.criteria import error, not_applicable, outcome

    assert keyword_defaults(outcome) == {"passed": inspect.Parameter.empty, "detail": ""}
    with pytest.raises(TypeError):
        outcome(True)  # type: ignore[misc]
    assert list(inspect.signature(error).parameters) == ["detail"]
    assert list(inspect.signature(not_applicable).parameters) == ["detail"]


def test_async_functions_are_async() -> None:
    from soev_pipeline.criteria import Builtin, judge_label
    from soev_pipeline.judges import LLMJudge

    assert inspect.iscoroutinefunction(judge_label)
    assert inspect.iscoroutinefunction(LLMJudge.judge)
    assert inspect.iscoroutinefunction(Builtin.evaluate)


def test_builtin_is_a_dataclass_of_name_params_model_evaluator() -> None:
    from soev_pipeline.criteria import Builtin

    assert dataclasses.is_dataclass(Builtin)
    assert [f.name for f in dataclasses.fields(Builtin)][:3] == [
        "name",
        "params_model",
        "evaluator",
    ]


def test_runtime_bindings_is_a_dataclass_of_five_services() -> None:
    from soev_pipeline.cli import RuntimeBindings

    fields = {f.name: f.default for f in dataclasses.fields(RuntimeBindings)}
    assert fields == dict.fromkeys(["arm", "judge", "language_detector", "setup", "tracker"])


def test_the_runtime_example_satisfies_the_provider_protocol() -> None:
    from contextlib import asynccontextmanager

    from soev_pipeline.cli import RuntimeBindings, RuntimeProvider

    class Runtime:
        @asynccontextmanager
        async def open(self, loaded, *, operation):  # type: ignore[no-untyped-def]
            yield RuntimeBindings()

    assert isinstance(Runtime(), RuntimeProvider)


def test_seal_changed_error_takes_the_changed_ids() -> None:
    from soev_pipeline.cli import SealChangedError

    assert list(inspect.signature(SealChangedError).parameters) == ["changed_ids"]
