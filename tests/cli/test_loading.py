"""`load`: every error it raises names the file, the case and the field."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
import yaml

from soev_pipeline.cli import (
    CriterionParamsError,
    DuplicateCriterionError,
    ProjectError,
    SealChangedError,
    SuiteError,
    UnknownCriterionError,
    load,
    main,
)
from soev_pipeline.project import read_project, write_seal
from tests.conftest import SECRET, write_project

URL = "http://127.0.0.1:9/"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", URL)


def _edit_yaml(file: Path, edit) -> None:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    edit(data)
    file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def _kern(path: Path) -> Path:
    return path.parent / "suites" / "kern" / "kern.yaml"


def _cli_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["seal", "--project", str(path)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_loads_the_project(path: Path) -> None:
    loaded = load(path)
    assert [suite.name for suite in loaded.suites] == ["kern", "privacy"]
    kern = loaded.suite("kern")
    assert [case.id for case in kern.cases][:2] == ["kern-001", "kern-002"]
    first = kern.cases[0]
    assert [spec.kind for spec in first.criteria] == ["run.no_failure", "usage.max_tokens"]
    assert first.criteria[0].gate
    assert kern.cases[1].turns == ("Ik wil bezwaar maken.", "En hoe lang heb ik daarvoor?")
    assert loaded.context.messages["privacy"].startswith("Ik kan geen")
    assert loaded.params[("kern-001", 1)].max == 100  # type: ignore[attr-defined]


def test_unknown_project_key(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit_yaml(path, lambda data: data.update(bogus=1))
    with pytest.raises(pydantic.ValidationError):
        load(path)
    assert f"{path}: bogus: unknown key" in _cli_error(path, capsys)


def test_unknown_system_key(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit_yaml(path, lambda data: data["system"].update(retries=3))
    assert "system.retries: unknown key" in _cli_error(path, capsys)


def test_invalid_project_yaml(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(yaml.YAMLError):
        load(path)
    assert "line " in _cli_error(path, capsys)


def test_missing_project_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OSError):
        read_project(tmp_path / "nope.yaml")
    assert "no such project file" in _cli_error(tmp_path / "nope.yaml", capsys)


def test_suite_declares_another_suite(path: Path) -> None:
    _edit_yaml(_kern(path), lambda data: data.update(suite="privacy"))
    with pytest.raises(ProjectError, match=r"declares suite 'privacy'.*'kern'"):
        load(path)


def test_suite_without_files(path: Path) -> None:
    _kern(path).unlink()
    with pytest.raises(SuiteError, match=r"suite 'kern': no file matches 'suites/kern/\*.yaml'"):
        load(path)


def test_invalid_suite_yaml(path: Path) -> None:
    _kern(path).write_text("suite: kern\ncases: [\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"kern\.yaml: line \d+"):
        load(path)


def test_unknown_case_key(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit_yaml(_kern(path), lambda data: data["cases"][0].update(inputt="x"))
    with pytest.raises(SuiteError) as raised:
        load(path)
    assert str(raised.value) == f"{_kern(path)}: case 'kern-001': inputt: unknown key"
    assert "case 'kern-001': inputt: unknown key" in _cli_error(path, capsys)


def test_bad_field_value(path: Path) -> None:
    _edit_yaml(_kern(path), lambda data: data["cases"][0].update(behaviour="weigeren"))
    with pytest.raises(SuiteError, match=r"case 'kern-001': behaviour: Input should be"):
        load(path)


def test_invalid_test_case_is_not_named(path: Path) -> None:
    _edit_yaml(_kern(path), lambda data: data["cases"][3].update(tags="x"))
    with pytest.raises(SuiteError) as raised:
        load(path)
    assert "test case #4" in str(raised.value)
    assert "kern-t01" not in str(raised.value) and SECRET not in str(raised.value)


def test_duplicate_case_id(path: Path) -> None:
    _edit_yaml(
        path.parent / "suites" / "privacy.yaml",
        lambda data: data["cases"][0].update(id="kern-001"),
    )
    unique = r"case or variant id 'kern-001' is not unique"
    with pytest.raises(ProjectError, match=unique) as raised:
        load(path)
    assert "privacy.yaml" in str(raised.value) and "kern.yaml" in str(raised.value)


def test_duplicate_test_case_id_is_not_named(path: Path) -> None:
    _edit_yaml(
        path.parent / "suites" / "privacy.yaml",
        lambda data: data["cases"][1].update(id="kern-t01"),
    )
    with pytest.raises(ProjectError, match=r"a test case or variant id is not unique") as raised:
        load(path)
    assert "kern-t01" not in str(raised.value)


def test_unknown_criterion_kind(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit_yaml(
        _kern(path), lambda data: data["cases"][0]["criteria"][0].update(kind="usage.max_token")
    )
    with pytest.raises(UnknownCriterionError) as raised:
        load(path)
    message = str(raised.value)
    assert "case 'kern-001': criteria[0]: kind: unknown criterion kind 'usage.max_token'" in message
    assert "did you mean 'usage.max_tokens'" in message
    assert "unknown criterion kind" in _cli_error(path, capsys)


def test_bad_criterion_parameter(path: Path) -> None:
    _edit_yaml(_kern(path), lambda data: data["cases"][0]["criteria"][0].update(max="veel"))
    with pytest.raises(CriterionParamsError, match=r"case 'kern-001': criteria\[0\]: .*'max'"):
        load(path)


def test_unknown_criterion_parameter(path: Path) -> None:
    _edit_yaml(_kern(path), lambda data: data["criteria"][0].update(strict=True))
    with pytest.raises(CriterionParamsError, match=r"shared by the file.*'strict'"):
        load(path)


def test_unknown_message_code(path: Path) -> None:
    _edit_yaml(
        path.parent / "suites" / "privacy.yaml",
        lambda data: data["cases"][0].update(message="weigering"),
    )
    with pytest.raises(SuiteError, match=r"case 'priv-001': message: 'weigering' is not a project"):
        load(path)


HOOKS = """
from soev_pipeline.core import FrozenModel
from soev_pipeline.criteria import Builtin, outcome


class Params(FrozenModel):
    word: str = "termijn"


async def has_word(case, evidence, *, params, ctx):
    return outcome(passed=params.word in (evidence.reply or ""), detail=params.word)


CRITERIA = [Builtin(NAME, Params, has_word)]
"""


def test_hooks_add_kinds(path: Path) -> None:
    (path.parent / "hooks.py").write_text(
        HOOKS.replace("NAME", "'custom.word'") + "\nSETUP = None\n", encoding="utf-8"
    )
    _edit_yaml(path, lambda data: data.update(hooks="hooks"))
    _edit_yaml(
        _kern(path), lambda data: data["cases"][0]["criteria"].append({"kind": "custom.word"})
    )
    loaded = load(path)
    assert "custom.word" in loaded.registry
    assert loaded.setup is None


def test_hooks_duplicate_kind(path: Path) -> None:
    (path.parent / "hooks.py").write_text(
        HOOKS.replace("NAME", "'run.no_failure'"), encoding="utf-8"
    )
    _edit_yaml(path, lambda data: data.update(hooks="hooks"))
    with pytest.raises(DuplicateCriterionError, match=r"'run.no_failure' is already registered"):
        load(path)


def test_hooks_import_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit_yaml(path, lambda data: data.update(hooks="missing_hooks"))
    with pytest.raises(ImportError):
        load(path)
    assert "hooks" in _cli_error(path, capsys)


def test_corpus_errors(path: Path) -> None:
    corpus = path.parent / "corpus.jsonl"
    _edit_yaml(path, lambda data: data.update(corpus="corpus.jsonl"))
    corpus.write_text('{"id": "A", "text": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"corpus.jsonl: line 2: not valid JSON"):
        load(path)
    corpus.write_text('{"id": "A", "text": "x"}\n{"id": "A", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"line 2: duplicate unit id 'A'"):
        load(path)
    corpus.write_text('{"id": "A", "text": "x", "wet": "Awb"}\n', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"line 1: unknown field 'wet'"):
        load(path)


def test_definitions_false_reads_only_the_project_file(path: Path) -> None:
    _kern(path).write_text("not: [valid\n", encoding="utf-8")
    loaded = load(path, definitions=False)
    assert loaded.suites == [] and loaded.setup is None
    assert dict(loaded.context.messages) == {}


def test_suite_files_false(path: Path) -> None:
    _kern(path).write_text("not: [valid\n", encoding="utf-8")
    loaded = load(path, suite_files=False)
    assert loaded.suites == []
    assert "privacy" in loaded.context.messages


def test_project_override(path: Path) -> None:
    project = read_project(path).model_copy(update={"name": "ander"})
    assert load(path, project=project).project.name == "ander"


def _tests(path: Path):  # type: ignore[no-untyped-def]
    return [case for case in load(path, check_sealed=False).cases() if case.split == "test"]


def test_seal_detects_a_changed_test_case(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_seal(path.parent, _tests(path), append=False)
    load(path)
    _edit_yaml(_kern(path), lambda data: data["cases"][3].update(input="Andere vraag"))
    with pytest.raises(SealChangedError) as raised:
        load(path)
    assert raised.value.changed_ids == ["kern-t01"]
    assert "kern-t01" not in raised.value.aggregate_message
    assert "1 sealed test case changed" in raised.value.aggregate_message
    assert main(["run", "--project", str(path)]) == 1
    err = capsys.readouterr().err
    assert "1 sealed test case changed" in err and "kern-t01" not in err


def test_seal_detects_a_removed_test_case(path: Path) -> None:
    write_seal(path.parent, _tests(path), append=False)
    _edit_yaml(path.parent / "suites" / "privacy.yaml", lambda data: data["cases"].pop(1))
    with pytest.raises(SealChangedError) as raised:
        load(path)
    assert raised.value.changed_ids == ["priv-t01"]


def test_a_test_case_moved_to_dev_counts_as_removed(path: Path) -> None:
    write_seal(path.parent, _tests(path), append=False)
    _edit_yaml(_kern(path), lambda data: data["cases"][3].update(split="dev"))
    with pytest.raises(SealChangedError):
        load(path)


def test_unsealed_additions(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_seal(path.parent, _tests(path), append=False)
    new = {"id": "kern-t02", "split": "test", "input": "Nieuwe geheime vraag"}
    _edit_yaml(_kern(path), lambda data: data["cases"].append(new))
    with pytest.raises(ProjectError, match=r"1 test case is not sealed") as raised:
        load(path)
    assert "kern-t02" not in str(raised.value)
    load(path, allow_test_additions=True)
    assert main(["seal", "--append", "--project", str(path)]) == 0
    assert "sealed 3 test cases" in capsys.readouterr().out
    load(path)


def test_seal_append_refuses_a_changed_case(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["seal", "--project", str(path)]) == 0
    capsys.readouterr()
    _edit_yaml(_kern(path), lambda data: data["cases"][3].update(input="Anders"))
    assert main(["seal", "--append", "--project", str(path)]) == 1
    err = capsys.readouterr().err
    assert "changed" in err and "kern-t01" not in err


def test_seal_again_replaces(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["seal", "--project", str(path)]) == 0
    _edit_yaml(_kern(path), lambda data: data["cases"][3].update(input="Anders"))
    capsys.readouterr()
    assert main(["seal", "--project", str(path)]) == 0
    assert "1 replaced" in capsys.readouterr().out
    load(path)
