"""`load` (docs/python-api.md#what-is-public, docs/project.md): what it reads and each error
it raises, naming the file, the case and the field (and never a test case)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from soev_pipeline.cli import (
    CriterionParamsError,
    DuplicateCriterionError,
    LoadedProject,
    ProjectError,
    SuiteError,
    UnknownCriterionError,
    load,
)
from soev_pipeline.core import Project
from soev_pipeline.project import read_project
from tests.support.project import SECRET, edit_yaml, write_project

URL = "http://127.0.0.1:9/"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The full project of tests/support/project.py (docs/project.md)."""
    return write_project(tmp_path / "p", URL, URL + "v1/")


def kern(path: Path) -> Path:
    return path.parent / "suites" / "kern" / "awb.yaml"


def privacy(path: Path) -> Path:
    return path.parent / "suites" / "privacy" / "persoonsgegevens.yaml"


def add_criterion(path: Path, criterion: dict[str, Any], case: int = 0) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][case]["criteria"].append(criterion))


def append(file: Path, text: str) -> None:
    with file.open("a", encoding="utf-8") as stream:
        stream.write(text)


def write_hooks_kind(path: Path, name: str) -> None:
    (path.parent / "hooks.py").write_text(
        "from soev_pipeline.criteria import Builtin, NoParams, outcome\n"
        "async def f(case, evidence, *, params, ctx):\n    return outcome(passed=True)\n"
        f"CRITERIA = [Builtin({name!r}, NoParams, f)]\n"
    )


def test_load_takes_the_path_and_the_suite_cache() -> None:
    parameters = inspect.signature(load).parameters
    assert next(iter(parameters)) == "path"
    defaults = {name: p.default for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert defaults == {"suite_cache": None}


def test_a_loaded_project_has_the_fields_of_the_reference() -> None:
    names = [field.name for field in dataclasses.fields(LoadedProject)]
    assert names[:6] == ["path", "project", "registry", "suites", "setup", "context"]


def test_load_reads_everything(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(path.parent.parent)
    loaded = load(Path("p") / "project.yaml")
    assert isinstance(loaded, LoadedProject)
    assert loaded.path == path.resolve() and loaded.path.is_absolute()
    assert isinstance(loaded.project, Project)
    assert loaded.project.name == "wetwijzer"
    assert "custom.thanks" in loaded.registry and "reply.contains" in loaded.registry
    assert [suite.name for suite in loaded.suites] == ["kern", "privacy"]
    kern_ids = [case.id for case in loaded.suites[0].cases]
    assert kern_ids == ["kern-001", "kern-002", "kern-t01", "kern-003"]  # file order, merged
    assert loaded.setup is not None
    context = loaded.context
    assert context.messages["privacy"].startswith("Ik kan geen vragen")
    assert context.rubrics["rubrics/termijn.md"].startswith("Beoordeel")
    assert context.corpus is not None
    assert context.judge is None and context.language_detector is None


def test_a_case_gets_its_file_criteria_first(path: Path) -> None:
    first = load(path).suite("kern").cases[0]
    assert [spec.kind for spec in first.criteria][:2] == ["run.no_failure", "citations.required"]
    assert first.criteria[0].gate
    assert load(path).params[("kern-001", 4)].min == 0.5  # type: ignore[attr-defined]


def test_hooks_without_a_setup_give_none(path: Path) -> None:
    hooks = path.parent / "hooks.py"
    hooks.write_text(hooks.read_text().split("@asynccontextmanager")[0] + "SETUP = None\n")
    loaded = load(path)
    assert loaded.setup is None and "custom.thanks" in loaded.registry


def test_weight_and_gate_are_allowed_on_kinds_without_parameters(path: Path) -> None:
    add_criterion(path, {"kind": "run.no_failure", "weight": 3, "gate": False})
    assert load(path).suites[0].cases[0].criteria[-1].weight == 3


def test_hooks_kinds_are_validated_at_load_not_at_grading(path: Path) -> None:
    add_criterion(path, {"kind": "custom.thanks", "word": ["lijst"]})
    with pytest.raises(CriterionParamsError, match=r"case 'kern-001'.*'word'"):
        load(path)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda p: edit_yaml(p.parent / "suites/kern/extra.yaml", lambda d: d.update(suite="x")),
         ProjectError),
        (lambda p: edit_yaml(privacy(p), lambda d: d["cases"][0].update(id="kern-001")),
         ProjectError),
        (lambda p: append(p.parent / "corpus.jsonl", '{"text": "geen id"}\n'), ProjectError),
        (lambda p: edit_yaml(p, lambda d: d["suites"][0].update(files="leeg/*.yaml")),
         SuiteError),
        (lambda p: edit_yaml(kern(p), lambda d: d["cases"][0].update(vraag=1)), SuiteError),
        (lambda p: add_criterion(p, {"kind": "reply.contain"}), UnknownCriterionError),
        (lambda p: add_criterion(p, {"kind": "run.no_failure", "x": 1}), CriterionParamsError),
        (lambda p: add_criterion(p, {"kind": "reply.max_length", "max": "lang"}),
         CriterionParamsError),
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
)  # fmt: skip
def test_load_raises_the_documented_errors(
    path: Path, change: Any, error: type[BaseException]
) -> None:
    change(path)
    with pytest.raises(error):
        load(path)


def test_the_files_a_hooks_kind_names_are_read_once_at_load(path: Path) -> None:
    append(
        path.parent / "hooks.py",
        "from soev_pipeline.core import FrozenModel\n"
        "from soev_pipeline.criteria import criterion, outcome\n"
        "class Params(FrozenModel):\n    template: str\n"
        "@criterion('custom.template', Params, needs=(), files=lambda p: [p.template])\n"
        "async def template(case, evidence, *, params, ctx):\n"
        "    return outcome(passed=params.template in ctx.rubrics)\n"
        "CRITERIA.append(template)\n",
    )
    add_criterion(path, {"kind": "custom.template", "template": "sjablonen/brief.md"})
    (path.parent / "sjablonen").mkdir()
    (path.parent / "sjablonen" / "brief.md").write_text("Geachte heer,\n", encoding="utf-8")
    assert load(path).context.rubrics["sjablonen/brief.md"] == "Geachte heer,\n"
    (path.parent / "sjablonen" / "brief.md").unlink()
    with pytest.raises(OSError, match=r"\(the file of .*awb\.yaml: case 'kern-001'"):
        load(path)


# --------------------------------------------------------------------------- the messages


def test_a_suite_that_declares_another_suite_names_both(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data.update(suite="privacy"))
    with pytest.raises(ProjectError, match=r"awb\.yaml.*declares suite 'privacy'.*'kern'"):
        load(path)


def test_a_suite_without_files_names_its_glob(path: Path) -> None:
    edit_yaml(path, lambda data: data["suites"][0].update(files="suites/leeg/*.yaml"))
    with pytest.raises(SuiteError, match=r"suite 'kern': no file matches 'suites/leeg/\*.yaml'"):
        load(path)


def test_invalid_suite_yaml_names_the_line(path: Path) -> None:
    kern(path).write_text("suite: kern\ncases: [\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"awb\.yaml: line \d+"):
        load(path)


def test_an_unknown_case_key_names_the_file_the_case_and_the_key(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][0].update(inputt="x"))
    with pytest.raises(SuiteError) as raised:
        load(path)
    assert str(raised.value) == f"{kern(path)}: case 'kern-001': inputt: unknown key"


def test_a_bad_field_value_names_the_field(path: Path) -> None:
    edit_yaml(privacy(path), lambda data: data["cases"][0].update(behaviour="weigeren"))
    with pytest.raises(SuiteError, match=r"case 'priv-001': behaviour: Input should be"):
        load(path)


def test_an_invalid_test_case_is_named_by_its_position_only(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][2].update(tags="x"))
    with pytest.raises(SuiteError) as raised:
        load(path)
    assert "test case #3" in str(raised.value)
    assert "kern-t01" not in str(raised.value) and SECRET not in str(raised.value)


def test_a_duplicate_case_id_names_both_files(path: Path) -> None:
    edit_yaml(privacy(path), lambda data: data["cases"][0].update(id="kern-001"))
    with pytest.raises(
        ProjectError, match=r"case or variant id 'kern-001' is not unique"
    ) as raised:
        load(path)
    assert "persoonsgegevens.yaml" in str(raised.value) and "awb.yaml" in str(raised.value)


def test_a_duplicate_test_case_id_is_not_named(path: Path) -> None:
    edit_yaml(privacy(path), lambda data: data["cases"][1].update(id="kern-t01"))
    with pytest.raises(ProjectError, match=r"a test case or variant id is not unique") as raised:
        load(path)
    assert "kern-t01" not in str(raised.value)


def test_an_unknown_criterion_kind_names_the_close_matches(path: Path) -> None:
    edit_yaml(kern(path), lambda d: d["cases"][1]["criteria"][0].update(kind="usage.max_token"))
    with pytest.raises(UnknownCriterionError) as raised:
        load(path)
    message = str(raised.value)
    assert "case 'kern-002': criteria[0]: kind: unknown criterion kind 'usage.max_token'" in message
    assert "did you mean 'usage.max_tokens'" in message


def test_a_bad_criterion_parameter_names_the_case_and_the_parameter(path: Path) -> None:
    edit_yaml(kern(path), lambda d: d["cases"][1]["criteria"][0].update(max="veel"))
    with pytest.raises(CriterionParamsError, match=r"case 'kern-002': criteria\[0\]: .*'max'"):
        load(path)


def test_a_bad_parameter_of_a_file_criterion_says_it_is_shared(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data["criteria"][0].update(strict=True))
    with pytest.raises(CriterionParamsError, match=r"shared by the file.*'strict'"):
        load(path)


def test_an_unknown_message_code_names_it(path: Path) -> None:
    edit_yaml(privacy(path), lambda data: data["cases"][0].update(message="weigering"))
    with pytest.raises(SuiteError, match=r"case 'priv-001': message: 'weigering' is not a project"):
        load(path)


def test_a_hooks_kind_of_a_built_in_name_is_refused(path: Path) -> None:
    write_hooks_kind(path, "run.no_failure")
    with pytest.raises(DuplicateCriterionError, match=r"'run.no_failure' is already registered"):
        load(path)


def test_corpus_errors_name_the_line(path: Path) -> None:
    corpus = path.parent / "corpus.jsonl"
    corpus.write_text('{"id": "A", "text": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"corpus.jsonl: line 2: not valid JSON"):
        load(path)
    corpus.write_text('{"id": "A", "text": "x"}\n{"id": "A", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"line 2: duplicate unit id 'A'"):
        load(path)
    corpus.write_text('{"id": "A", "text": "x", "wet": "Awb"}\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"line 1: unknown field 'wet'"):
        load(path)


def test_read_project_reads_the_file_alone(path: Path) -> None:
    (path.parent / "hooks.py").write_text("raise RuntimeError('niet importeren')\n")
    kern(path).write_text("suite: [kapot\n")
    assert read_project(path).name == "wetwijzer"
    with pytest.raises(OSError):
        read_project(path.parent / "nope.yaml")


def test_a_suites_digest_is_computed_once(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from soev_pipeline.core.models import Case

    suite = load(path).suite("kern")
    calls: list[str] = []
    digest = Case.digest

    def counted(case: Case) -> str:
        calls.append(case.id)
        return digest(case)

    monkeypatch.setattr(Case, "digest", counted)
    first = suite.digest()
    assert suite.digest() == first and len(calls) == len(suite.cases)
    assert dataclasses.replace(suite).digest() == first  # an equal suite computes its own
    assert len(calls) == 2 * len(suite.cases)
