"""resolve_runtime: the built-in provider by default, else the one entry point of the name."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from soev_pipeline.cli import ProjectError
from soev_pipeline.runtime import BuiltinRuntime, resolve_runtime


def test_the_builtin_provider_is_the_default_and_has_a_name() -> None:
    assert isinstance(resolve_runtime(None), BuiltinRuntime)
    assert isinstance(resolve_runtime("builtin"), BuiltinRuntime)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ProjectError, match=r"runtime 'nope': no entry point.*known: builtin"):
        resolve_runtime("nope")


def test_two_entry_points_of_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def two(group: str) -> list[EntryPoint]:
        return [
            EntryPoint("twice", "one_runtime:Runtime", group),
            EntryPoint("twice", "other_runtime:Runtime", group),
        ]

    monkeypatch.setattr("soev_pipeline.runtime.resolve.entry_points", two)
    with pytest.raises(ProjectError, match=r"runtime 'twice': 2 entry points"):
        resolve_runtime("twice")


def test_a_factory_that_makes_no_provider_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def one(group: str) -> list[EntryPoint]:
        return [EntryPoint("odd", "builtins:object", group)]

    monkeypatch.setattr("soev_pipeline.runtime.resolve.entry_points", one)
    with pytest.raises(ProjectError, match=r"runtime 'odd': builtins:object did not make"):
        resolve_runtime("odd")


class _Provider:
    """A provider whose factories take what they will."""

    def __init__(self, given: dict[str, object]) -> None:
        self.given = given

    def open(self, loaded: object, *, operation: str) -> object:  # pragma: no cover - unused
        raise NotImplementedError


def with_state(state_dir: object = None) -> _Provider:
    return _Provider({"state_dir": state_dir})


def with_anything(**given: object) -> _Provider:
    return _Provider(given)


def without() -> _Provider:
    return _Provider({})


@pytest.mark.parametrize(
    ("factory", "given"),
    [
        ("with_state", {"state_dir": "STATE"}),
        ("with_anything", {"state_dir": "STATE"}),
        ("without", {}),
    ],
)
def test_a_factory_gets_the_state_folder_when_it_takes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, factory: str, given: dict[str, object]
) -> None:
    def one(group: str) -> list[EntryPoint]:
        return [EntryPoint("mine", f"{__name__}:{factory}", group)]

    monkeypatch.setattr("soev_pipeline.runtime.resolve.entry_points", one)
    provider = resolve_runtime("mine", state=tmp_path)
    assert isinstance(provider, _Provider)
    assert provider.given == {key: tmp_path for key in given}
