"""Sealing the test split: `load` stops at a changed, removed or unsealed test case, and
says how many, never which."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from soev_pipeline.cli import ProjectError, SealChangedError, load
from soev_pipeline.project import load_for_sealing, write_seal
from tests.support.project import SECRET, edit_yaml, write_project

HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", "http://127.0.0.1:9/")


def kern(path: Path) -> Path:
    return path.parent / "suites" / "kern" / "awb.yaml"


def privacy(path: Path) -> Path:
    return path.parent / "suites" / "privacy" / "persoonsgegevens.yaml"


def seal(path: Path, *, append: bool = False) -> Path:
    loaded = load_for_sealing(path, append=append)
    tests = [case for case in loaded.cases() if case.split == "test"]
    return write_seal(path.parent, tests, append=append).path


def change_test_case(path: Path) -> None:
    edit_yaml(kern(path), lambda data: data["cases"][2].update(input=f"Anders {SECRET}"))


def test_the_seal_maps_each_test_case_to_a_stable_digest(path: Path) -> None:
    sealed = seal(path)
    first = sealed.read_text()
    digests = yaml.safe_load(first)
    assert set(digests) == {"kern-t01", "priv-t01"}
    assert all(HEX64.match(value) for value in digests.values())
    assert seal(path).read_text() == first
    load(path)


def test_sealing_again_replaces_the_digest_of_a_changed_case(path: Path) -> None:
    seal(path)
    change_test_case(path)
    loaded = load_for_sealing(path, append=False)
    result = write_seal(path.parent, [c for c in loaded.cases() if c.split == "test"], append=False)
    assert (result.sealed, result.added, result.replaced, result.removed) == (2, 0, 1, 0)
    load(path)


def test_a_changed_test_case_stops_load_and_is_counted_not_named(path: Path) -> None:
    seal(path)
    change_test_case(path)
    with pytest.raises(SealChangedError) as raised:
        load(path)
    assert raised.value.changed_ids == ["kern-t01"]
    assert isinstance(raised.value, ProjectError)
    assert "1 sealed test case changed" in raised.value.aggregate_message
    assert "kern-t01" not in raised.value.aggregate_message


def test_removed_and_changed_cases_are_counted_together(path: Path) -> None:
    seal(path)
    change_test_case(path)
    edit_yaml(privacy(path), lambda data: data.update(cases=data["cases"][:1]))
    with pytest.raises(SealChangedError) as raised:
        load(path)
    assert sorted(raised.value.changed_ids) == ["kern-t01", "priv-t01"]
    message = raised.value.aggregate_message
    assert "2" in message and "kern-t01" not in message and "priv-t01" not in message


def test_a_test_case_moved_to_dev_counts_as_removed(path: Path) -> None:
    seal(path)
    edit_yaml(kern(path), lambda data: data["cases"][2].update(split="dev"))
    with pytest.raises(SealChangedError):
        load(path)


def test_an_unsealed_test_case_is_accepted_only_to_append_it_to_the_seal(path: Path) -> None:
    seal(path)
    new = {"id": "kern-t02", "split": "test", "input": f"Nieuw {SECRET}"}
    edit_yaml(kern(path), lambda data: data["cases"].append(new))
    with pytest.raises(ProjectError, match=r"1 test case is not sealed") as raised:
        load(path)
    assert "kern-t02" not in str(raised.value) and SECRET not in str(raised.value)
    appending = load_for_sealing(path, append=True)
    assert "kern-t02" in [case.id for case in appending.cases()]
    change_test_case(path)
    with pytest.raises(SealChangedError):
        load_for_sealing(path, append=True)


def test_an_appended_seal_keeps_the_sealed_digests(path: Path) -> None:
    before = yaml.safe_load(seal(path).read_text())
    new = {"id": "kern-t02", "split": "test", "input": "Nieuw?"}
    edit_yaml(kern(path), lambda data: data["cases"].append(new))
    after = yaml.safe_load(seal(path, append=True).read_text())
    assert set(after) == {"kern-t01", "kern-t02", "priv-t01"}
    assert {key: after[key] for key in before} == before
    load(path)


def test_seal_changed_error_takes_the_changed_ids_and_shows_them_only_in_str() -> None:
    assert list(inspect.signature(SealChangedError).parameters) == ["changed_ids"]
    exc = SealChangedError(["kern-t02", "kern-t01"])
    assert "kern-t01" in str(exc) and "kern-t02" in str(exc)
    assert "kern-t01" not in exc.aggregate_message and "kern-t02" not in exc.aggregate_message
    assert "2" in exc.aggregate_message
