"""soev_pipeline.cli.load, LoadedProject and SealChangedError, as the cli reference has them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pydantic
import pytest
import yaml

from soev_pipeline.cli import (
    CriterionParamsError,
    DuplicateCriterionError,
    LoadedProject,
    ProjectError,
    RuntimeBindings,
    SealChangedError,
    SuiteError,
    UnknownCriterionError,
    load,
)
from soev_pipeline.core import Project
from tests.conformance.conftest import CLI
from tests.conformance.support import SECRET, edit_yaml, write_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")


def kern(project: Path) -> Path:
    return project.parent / "suites" / "kern" / "awb.yaml"


def test_load_reads_everything(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.parent.parent)
    loaded = load(Path("p") / "project.yaml")
    assert isinstance(loaded, LoadedProject)
    assert loaded.path == project.resolve() and loaded.path.is_absolute()
    assert isinstance(loaded.project, Project)
    assert loaded.project.name == "wetwijzer"
    assert "custom.thanks" in loaded.registry and "reply.contains" in loaded.registry
    assert [suite.name for suite in loaded.suites] == ["kern", "privacy"]
    kern_ids = [case.id for case in loaded.suites[0].cases]
    assert kern_ids == ["kern-001", "kern-002", "kern-t01", "kern-003"]  # file order, merged
    assert loaded.setup is not None
    context = loaded.context
    assert context.messages["privacy"].startswith("Ik kan geen vragen")
    assert "rubrics/termijn.md" in context.rubrics
    assert context.rubrics["rubrics/termijn.md"].startswith("Beoordeel")
    assert context.corpus is not None
    assert context.judge is None and context.language_detector is None


def test_a_case_gets_its_file_criteria_first(project: Path) -> None:
    case = next(c for c in load(project).suites[0].cases if c.id == "kern-001")
    assert [spec.kind for spec in case.criteria][:2] == ["run.no_failure", "citations.required"]


def test_load_without_definitions_reads_the_project_file_only(project: Path) -> None:
    (project.parent / "hooks.py").write_text("raise RuntimeError('niet importeren')\n")
    loaded = load(project, definitions=False)
    assert loaded.suites == []
    assert loaded.setup is None
    assert "custom.thanks" not in loaded.registry
    assert len(loaded.registry) == 22
    assert not loaded.context.messages and not loaded.context.rubrics
    assert loaded.context.corpus is None


def test_load_without_suite_files_imports_the_hooks_only(project: Path) -> None:
    kern(project).write_text("suite: [kapot\n")
    loaded = load(project, suite_files=False)
    assert loaded.suites == []
    assert "custom.thanks" in loaded.registry
    assert loaded.setup is not None
    assert dict(loaded.context.messages) == dict(loaded.project.messages)
    assert not loaded.context.rubrics and loaded.context.corpus is None


def test_load_with_a_project_object(project: Path) -> None:
    data = yaml.safe_load(project.read_text())
    data["name"] = "anders"
    data["suites"] = data["suites"][1:]
    project.write_text("dit: [is geen geldig project\n")
    loaded = load(project, project=Project.model_validate(data))
    assert loaded.project.name == "anders"
    assert [suite.name for suite in loaded.suites] == ["privacy"]
    assert loaded.path == project.resolve()


def test_load_checks_the_seal(project: Path, cli: CLI) -> None:
    assert cli("seal", "--project", project).status == 0
    load(project)
    edit_yaml(kern(project), lambda d: d["cases"][2].update(input=f"Anders {SECRET}"))
    with pytest.raises(SealChangedError) as raised:
        load(project)
    assert raised.value.changed_ids == ["kern-t01"] or "kern-t01" in str(raised.value)
    assert "kern-t01" not in raised.value.aggregate_message
    assert "1" in raised.value.aggregate_message
    assert isinstance(raised.value, ProjectError)


def test_allow_test_additions(project: Path, cli: CLI) -> None:
    assert cli("seal", "--project", project).status == 0
    edit_yaml(
        kern(project),
        lambda d: d["cases"].append({"id": "kern-t02", "split": "test", "input": "Nieuwe vraag?"}),
    )
    with pytest.raises(ProjectError):
        load(project)
    loaded = load(project, allow_test_additions=True)
    assert "kern-t02" in [case.id for case in loaded.suites[0].cases]
    edit_yaml(kern(project), lambda d: d["cases"][2].update(input="Veranderd?"))
    with pytest.raises(SealChangedError):
        load(project, allow_test_additions=True)


def test_seal_changed_error() -> None:
    exc = SealChangedError(["kern-t02", "kern-t01"])
    assert "kern-t01" in str(exc) and "kern-t02" in str(exc)
    assert "kern-t01" not in exc.aggregate_message and "kern-t02" not in exc.aggregate_message
    assert "2" in exc.aggregate_message


def append(path: Path, text: str) -> None:
    with path.open("a") as stream:
        stream.write(text)


def write_hooks_kind(project: Path, name: str) -> None:
    (project.parent / "hooks.py").write_text(
        "from soev_pipeline.criteria import Builtin, NoParams, outcome\n"
        "async def f(case, evidence, *, params, ctx):\n    return outcome(passed=True)\n"
        f"CRITERIA = [Builtin({name!r}, NoParams, f)]\n"
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda p: edit_yaml(
                p.parent / "suites/kern/extra.yaml", lambda d: d.update(suite="privacy")
            ),
            ProjectError,
        ),
        (
            lambda p: edit_yaml(
                p.parent / "suites/privacy/persoonsgegevens.yaml",
                lambda d: d["cases"][0].update(id="kern-001"),
            ),
            ProjectError,
        ),
        (lambda p: append(p.parent / "corpus.jsonl", '{"text": "geen id"}\n'), ProjectError),
        (lambda p: edit_yaml(p, lambda d: d["suites"][0].update(files="leeg/*.yaml")), SuiteError),
        (lambda p: edit_yaml(kern(p), lambda d: d["cases"][0].update(vraag=1)), SuiteError),
        (
            lambda p: edit_yaml(
                kern(p), lambda d: d["cases"][0]["criteria"].append({"kind": "reply.contain"})
            ),
            UnknownCriterionError,
        ),
        (
            lambda p: edit_yaml(
                kern(p),
                lambda d: d["cases"][0]["criteria"].append({"kind": "run.no_failure", "x": 1}),
            ),
            CriterionParamsError,
        ),
        (
            lambda p: edit_yaml(
                kern(p),
                lambda d: d["cases"][0]["criteria"].append(
                    {"kind": "reply.max_length", "max": "lang"}
                ),
            ),
            CriterionParamsError,
        ),
        (lambda p: write_hooks_kind(p, "reply.contains"), DuplicateCriterionError),
        (lambda p: (p.parent / "hooks.py").write_text("import bestaat_niet\n"), ImportError),
        (lambda p: (p.parent / "rubrics" / "termijn.md").unlink(), OSError),
        (lambda p: p.write_text("name: [x\n"), yaml.YAMLError),
        (lambda p: edit_yaml(p, lambda d: d.update(onbekend=1)), pydantic.ValidationError),
        (lambda p: p.unlink(), OSError),
    ],
    ids=[
        "other suite",
        "duplicate id",
        "corpus line",
        "no file",
        "bad suite file",
        "unknown kind",
        "param of NoParams kind",
        "bad param",
        "duplicate kind",
        "hooks import",
        "rubric missing",
        "project YAML",
        "project key",
        "no project file",
    ],
)
def test_load_raises_the_documented_errors(
    project: Path, change, error: type[BaseException]
) -> None:
    change(project)
    with pytest.raises(error):
        load(project)


def test_weight_and_gate_are_allowed_on_kinds_without_parameters(project: Path) -> None:
    edit_yaml(
        kern(project),
        lambda d: d["cases"][0]["criteria"].append(
            {"kind": "run.no_failure", "weight": 3, "gate": False}
        ),
    )
    case = load(project).suites[0].cases[0]
    assert case.criteria[-1].weight == 3


def test_a_parameter_value_is_validated_at_load_not_at_grading(project: Path) -> None:
    edit_yaml(
        kern(project),
        lambda d: d["cases"][0]["criteria"].append({"kind": "custom.thanks", "word": ["lijst"]}),
    )
    with pytest.raises(CriterionParamsError):
        load(project)


def test_corpus_duplicate_id_names_the_line(project: Path) -> None:
    with (project.parent / "corpus.jsonl").open("a") as stream:
        stream.write(json.dumps({"id": "BWBR0005537/artikel-6:8", "text": "dubbel"}) + "\n")
    with pytest.raises(ProjectError, match="5"):
        load(project)


def test_runtime_bindings_defaults() -> None:
    bindings = RuntimeBindings()
    assert dataclasses.is_dataclass(bindings)
    assert (
        bindings.arm,
        bindings.judge,
        bindings.language_detector,
        bindings.setup,
        bindings.tracker,
    ) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert [field.name for field in dataclasses.fields(RuntimeBindings)] == [
        "arm",
        "judge",
        "language_detector",
        "setup",
        "tracker",
    ]
