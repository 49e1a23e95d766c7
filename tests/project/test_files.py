"""Reading the user's files safely: UTF-8, YAML without bombs or repeated keys, paths inside."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest
import yaml

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.project import files
from soev_pipeline.project.files import MAX_YAML_VALUES, YAMLFileError, inside, load_yaml, read_text


def _write(tmp_path: Path, text: str | bytes, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_fast_and_small(tmp_path: Path) -> None:
    path = _write(tmp_path, _bomb(9))
    assert path.stat().st_size < 2000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    expanded = f"aliases expand this document to more than {MAX_YAML_VALUES:,} values"
    with pytest.raises(YAMLFileError, match=expanded) as raised:
        load_yaml(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB
    assert raised.value.problem_mark is not None


def test_a_file_too_big_to_load_says_so_and_not_that_it_has_aliases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 10_000  # a hundredth of MAX_YAML_VALUES: the same check, a hundredth of the parsing
    monkeypatch.setattr(files, "MAX_YAML_VALUES", limit)
    path = _write(tmp_path, "cases: [" + ", ".join(["1"] * (limit + 1)) + "]\n")
    with pytest.raises(YAMLFileError) as raised:
        load_yaml(path)
    assert f"the file holds more than {limit:,} values" in str(raised.value.problem)
    assert "alias" not in str(raised.value.problem)


@pytest.mark.e2e
def test_a_suite_of_200_000_cases_is_refused_for_its_size(tmp_path: Path) -> None:
    lines = [f"- {{id: c{n}, input: Wat is de termijn?, split: dev}}" for n in range(200_000)]
    path = _write(tmp_path, "\n".join(["cases:", *lines]) + "\n")
    with pytest.raises(YAMLFileError) as raised:
        load_yaml(path)
    assert f"the file holds more than {MAX_YAML_VALUES:,} values" in str(raised.value.problem)
    assert "alias" not in str(raised.value.problem)


def test_modest_aliases_still_load(tmp_path: Path) -> None:
    path = _write(tmp_path, "base: &c {kind: reply.contains, substrings: [a]}\nuse: [*c, *c]\n")
    assert load_yaml(path)["use"][1] == {"kind": "reply.contains", "substrings": ["a"]}


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml(_write(tmp_path, "a: &a [1, *a]\n"))


@pytest.mark.parametrize(
    ("text", "line"),
    [("input: a\nsplit: dev\ninput: b\n", 3), ("{a: 1, b: 2, a: 3}\n", 1)],
    ids=["block", "flow"],
)
def test_a_repeated_key_is_refused_with_its_line(tmp_path: Path, text: str, line: int) -> None:
    with pytest.raises(yaml.YAMLError) as raised:
        load_yaml(_write(tmp_path, text))
    assert "duplicate key 'a'" in str(raised.value) or "duplicate key 'input'" in str(raised.value)
    assert raised.value.problem_mark.line + 1 == line  # type: ignore[attr-defined]


def test_merge_keys_may_override(tmp_path: Path) -> None:
    text = "base: &b {a: 1, b: 2}\nthis:\n  <<: *b\n  a: 3\n"
    assert load_yaml(_write(tmp_path, text))["this"] == {"a": 3, "b": 2}


def test_text_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = _write(tmp_path, b"name: caf\xe9\n")
    with pytest.raises(YAMLFileError, match="byte 9: not UTF-8"):
        load_yaml(path)
    with pytest.raises(ProjectError, match=r"x.yaml: byte 9: not UTF-8"):
        read_text(path)


def test_an_empty_file_is_none(tmp_path: Path) -> None:
    assert load_yaml(_write(tmp_path, "")) is None


def test_paths_must_stay_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "rubrics").mkdir(parents=True)
    (project / "rubrics" / "ok.md").write_text("x", encoding="utf-8")
    source = project / "project.yaml"
    assert (
        inside(project, "rubrics/ok.md", field="f", source=source)
        == (project / "rubrics" / "ok.md").resolve()
    )
    with pytest.raises(ProjectError, match="leads outside the project directory"):
        inside(project, "../secret.txt", field="corpus", source=source)
    with pytest.raises(ProjectError, match="is an absolute path"):
        inside(project, "/etc/passwd", field="corpus", source=source)
    os.symlink("/etc/passwd", project / "rubrics" / "link.md")
    with pytest.raises(ProjectError, match=r"project.yaml: criteria\[0\]: 'rubrics/link.md' leads"):
        inside(project, "rubrics/link.md", field="criteria[0]", source=source)
