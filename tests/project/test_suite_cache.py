"""The cache of parsed suite files: a hit reads no YAML and gives the cases a parse gives;
any change misses; a damaged entry is a miss that is written again."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from soev_pipeline.cli import (
    CriterionParamsError,
    ProjectError,
    SealChangedError,
    SuiteError,
    load,
)
from soev_pipeline.core.models import Case, CriterionSpec
from soev_pipeline.project import (
    LoadedProject,
    ProjectPaths,
    load_for_sealing,
    loading,
    suite_cache,
    write_seal,
)
from soev_pipeline.project.suite_cache import SuiteCache, SuiteFileCases
from tests.support.project import SECRET, dump, edit_yaml, write_project


def separate_test_cases(path: Path) -> None:
    """Move the test cases of each suite file into a file of its own beside it,
    `<name>-test.yaml`: files that hold a test case are never cached."""
    for file in sorted((path.parent / "suites").rglob("*.yaml")):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        tests = [case for case in data["cases"] if case.get("split") == "test"]
        if tests:
            data["cases"] = [case for case in data["cases"] if case not in tests]
            dump(file, data)
            dump(file.with_name(f"{file.stem}-test.yaml"), {"suite": data["suite"], "cases": tests})


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/")
    separate_test_cases(path)
    return path


@pytest.fixture
def cache(path: Path) -> Path:
    return ProjectPaths.of(path).suite_cache


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the suite files that `load` parses as YAML, in order."""
    names: list[str] = []
    parse = loading.parse_yaml

    def counting(data: bytes, file: Path) -> Any:
        names.append(file.name)
        return parse(data, file)

    monkeypatch.setattr(loading, "parse_yaml", counting)
    return names


def kern(path: Path) -> Path:
    return path.parent / "suites" / "kern" / "awb.yaml"


ALL_FILES = [
    "awb-test.yaml",
    "awb.yaml",
    "extra.yaml",
    "persoonsgegevens-test.yaml",
    "persoonsgegevens.yaml",
]
TEST_FILES = ["awb-test.yaml", "persoonsgegevens-test.yaml"]
"""The files of the test split: parsed by every load."""


def state(loaded: LoadedProject) -> list[Any]:
    """Everything `load` derives from the suite files, digests included (the hooks module is
    imported anew by each load, so its parameter models are compared by name)."""
    return [
        [(s.name, s.files, s.cases, dict(s.case_files), s.case_paths) for s in loaded.suites],
        [case.digest() for case in loaded.cases()],
        {key: (type(p).__name__, p.model_dump()) for key, p in loaded.params.items()},
        loaded.context.rubrics,
    ]


def test_a_hit_parses_no_yaml_and_loads_what_a_parse_loads(
    path: Path, cache: Path, parsed: list[str]
) -> None:
    cold = load(path, suite_cache=cache)
    assert parsed == ALL_FILES
    assert len(list(cache.glob("*.json"))) == 3
    parsed.clear()
    warm = load(path, suite_cache=cache)
    assert parsed == TEST_FILES
    assert state(warm) == state(cold) == state(load(path))


def test_the_cache_sits_in_the_state_beside_the_runs(tmp_path: Path) -> None:
    paths = ProjectPaths.of(tmp_path / "p" / "project.yaml", tmp_path / "archief" / "runs")
    assert paths.suite_cache == tmp_path / "archief" / ".soev" / "cache" / "suites"


def edit_case(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][0].update(input="Een andere vraag?"))


def edit_shared_criteria(path: Path) -> None:
    edit_yaml(
        kern(path), lambda data: data["criteria"].append({"kind": "reply.max_length", "max": 900})
    )


def touch_bytes(path: Path) -> None:
    kern(path).write_text(kern(path).read_text() + "# alleen commentaar\n")


def other_code(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite_cache, "code_version", lambda: "een andere versie")


@pytest.mark.parametrize(
    "change",
    [
        lambda p, m: edit_case(p),
        lambda p, m: edit_shared_criteria(p),
        lambda p, m: touch_bytes(p),
        other_code,
    ],
    ids=["case", "shared criteria", "comment", "code version"],
)
def test_any_change_to_a_file_or_the_parsing_code_misses(
    path: Path,
    cache: Path,
    parsed: list[str],
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, pytest.MonkeyPatch], None],
) -> None:
    load(path, suite_cache=cache)
    change(path, monkeypatch)
    parsed.clear()
    warm = load(path, suite_cache=cache)
    everything = change is other_code
    assert parsed == (ALL_FILES if everything else ["awb-test.yaml", "awb.yaml", TEST_FILES[1]])
    assert state(warm) == state(load(path))
    parsed.clear()
    load(path, suite_cache=cache)
    assert parsed == TEST_FILES


def test_a_suite_renamed_in_the_project_misses(path: Path, cache: Path) -> None:
    load(path, suite_cache=cache)
    edit_yaml(path, lambda data: data["suites"][0].update(name="kern2"))
    with pytest.raises(ProjectError, match=r"declares suite 'kern'.*'kern2'"):
        load(path, suite_cache=cache)


def test_what_depends_on_the_project_is_checked_on_a_hit(path: Path, cache: Path) -> None:
    load(path, suite_cache=cache)
    edit_yaml(path, lambda data: {**data, "messages": {"out_of_scope": "Nee."}})
    with pytest.raises(SuiteError, match=r"'privacy' is not a project message"):
        load(path, suite_cache=cache)
    edit_yaml(path, lambda data: data["messages"].update(privacy="Nee."))
    load(path, suite_cache=cache)
    hooks = path.parent / "hooks.py"
    hooks.write_text(hooks.read_text().replace('word: str = "dank"', "word: int = 0"))
    with pytest.raises(CriterionParamsError, match=r"case 'kern-001'.*'word'"):
        load(path, suite_cache=cache)


def test_a_bad_file_is_not_cached_and_fails_the_same_way(path: Path, cache: Path) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][0].update(inputt="x"))
    with pytest.raises(SuiteError) as uncached:
        load(path)
    for _ in range(2):
        with pytest.raises(SuiteError) as cached:
            load(path, suite_cache=cache)
        assert str(cached.value) == str(uncached.value)
    assert not cache.exists()


def test_sealed_cases_are_checked_on_a_hit(path: Path, cache: Path) -> None:
    loaded = load_for_sealing(path, append=False, suite_cache=cache)
    write_seal(path.parent, [c for c in loaded.cases() if c.split == "test"], append=False)
    load(path, suite_cache=cache)
    test_file = kern(path).with_name("awb-test.yaml")
    edit_yaml(test_file, lambda data: data["cases"][0].update(input=f"Anders {SECRET}"))
    load_for_sealing(path, append=False, suite_cache=cache)
    with pytest.raises(SealChangedError):
        load(path, suite_cache=cache)


def entry(cache: Path, path: Path) -> Path:
    return cache / SuiteCache(cache)._entry(kern(path)).name


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data.replace(b"Binnen welke", b"Buiten welke"),
        lambda data: data.replace(b'"format":2', b'"format":3'),
        lambda data: data.replace(b'"key":"', b'"key":"0'),
        lambda data: b"\x80\x00 geen json\n" + data,
        lambda data: b"",
    ],
    ids=["truncated", "garbled", "other format", "other key", "not json", "empty"],
)
def test_a_damaged_entry_is_a_miss_and_is_written_again(
    path: Path, cache: Path, parsed: list[str], damage: Callable[[bytes], bytes]
) -> None:
    expected = state(load(path, suite_cache=cache))
    file = entry(cache, path)
    whole = file.read_bytes()
    file.write_bytes(damage(whole))
    parsed.clear()
    assert state(load(path, suite_cache=cache)) == expected
    assert parsed == ["awb-test.yaml", "awb.yaml", "persoonsgegevens-test.yaml"]
    assert file.read_bytes() == whole


def case(**params: Any) -> Case:
    spec = CriterionSpec.model_validate({"kind": "x", "params": params})
    return Case(id="a", turns=("vraag?",), criteria=(spec,), suite="s")


def test_cases_that_do_not_read_back_the_same_are_not_cached(tmp_path: Path) -> None:
    cache = SuiteCache(tmp_path)
    file = tmp_path / "suite.yaml"
    key = cache.key(b"x", "s")
    assert key is not None
    lossy = case(params={"a": 1})  # serialized flat, it reads back as {"a": 1}
    assert lossy.criteria[0].params == {"params": {"a": 1}}
    cache.put(file, key, SuiteFileCases((lossy,), 0))
    assert cache.get(file, key) is None
    cache.put(file, key, SuiteFileCases((case(a=1),), 0))
    assert cache.get(file, key) == SuiteFileCases((case(a=1),), 0)


def test_writers_at_once_leave_one_whole_entry(tmp_path: Path) -> None:
    file = tmp_path / "suite.yaml"
    versions = [SuiteFileCases((case(n=n),), 0) for n in range(8)]
    keys = [SuiteCache(tmp_path).key(str(n).encode(), "s") for n in range(8)]
    threads = [
        threading.Thread(target=SuiteCache(tmp_path).put, args=(file, keys[n], versions[n]))
        for n in range(8)
        for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]
    hits = [
        (SuiteCache(tmp_path).get(file, key), version)
        for key, version in zip(keys, versions, strict=True)
    ]
    assert [hit == version for hit, version in hits if hit is not None] == [True]


def test_entries_of_files_that_are_gone_are_deleted(path: Path, cache: Path) -> None:
    load(path, suite_cache=cache)
    busy, crashed = cache / "busy.tmp", cache / "crashed.tmp"
    busy.write_bytes(b"half")
    crashed.write_bytes(b"half")
    os.utime(crashed, (time.time() - 7200, time.time() - 7200))
    (path.parent / "suites" / "kern" / "extra.yaml").unlink()
    load(path, suite_cache=cache)
    assert len(list(cache.glob("*.json"))) == 3  # nothing written: nothing pruned
    edit_case(path)
    load(path, suite_cache=cache)
    assert len(list(cache.glob("*.json"))) == 2
    assert busy.exists() and not crashed.exists()


def test_the_test_split_never_reaches_the_cache(tmp_path: Path, parsed: list[str]) -> None:
    """The sealed split lives in the suite files and the archive only: a file that holds a
    test case is parsed every time, and an older entry of it is deleted."""
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/")  # test cases beside dev ones
    cache = ProjectPaths.of(path).suite_cache
    extra = path.parent / "suites" / "kern" / "extra.yaml"
    load(path, suite_cache=cache)
    parsed.clear()
    load(path, suite_cache=cache)
    assert parsed == ["awb.yaml", "persoonsgegevens.yaml"]
    [only] = cache.iterdir()
    assert only.name == SuiteCache(cache)._entry(extra).name
    assert SECRET.encode() not in only.read_bytes()
    edit_yaml(
        extra,
        lambda data: data["cases"].append(
            {"id": "kern-t02", "split": "test", "input": f"Nog een {SECRET}?"}
        ),
    )
    load_for_sealing(path, append=False, suite_cache=cache)
    assert list(cache.iterdir()) == []


def test_an_entry_of_the_first_format_is_deleted_when_met(path: Path, cache: Path) -> None:
    """Entries of format 1 could hold test cases."""
    load(path, suite_cache=cache)
    file = entry(cache, path)
    file.write_bytes(file.read_bytes().replace(b'"format":2', b'"format":1'))
    key = SuiteCache(cache).key(kern(path).read_bytes(), "kern")
    assert key is not None
    assert SuiteCache(cache).get(kern(path), key) is None
    assert not file.exists()
