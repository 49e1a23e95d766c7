"""Runtime providers from the entry point group `soev.evals.runtimes`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from soev_pipeline.cli import ProjectError, main
from soev_pipeline.runtime import BuiltinRuntime, resolve_runtime
from tests.support.scripted_system import ScriptedSystem

RUNTIME = """
import json
from contextlib import asynccontextmanager
from pathlib import Path

from soev_pipeline.cli import BuiltinRuntime, RuntimeBindings

PUBLISHED = Path(__file__).with_name("published.json")


class Tracker:
    async def publish(self, *, manifest, report):
        PUBLISHED.write_text(json.dumps({"manifest": manifest, "report": report}))


class Runtime:
    @asynccontextmanager
    async def open(self, loaded, *, operation):
        async with BuiltinRuntime().open(loaded, operation=operation) as bindings:
            yield RuntimeBindings(arm=bindings.arm, judge=bindings.judge, tracker=Tracker())
"""


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> Path:
    """Put a distribution with runtime entry points on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tracked_runtime.py").write_text(RUNTIME, encoding="utf-8")
    for index, name in enumerate(names):
        info = site / f"tracked_runtime_{index}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: tracked-runtime-{index}\nVersion: 0.1\n"
        )
        (info / "entry_points.txt").write_text(
            f"[soev.evals.runtimes]\n{name} = tracked_runtime:Runtime\n"
        )
    monkeypatch.syspath_prepend(str(site))
    return site


def test_builtin_is_registered_and_default() -> None:
    assert isinstance(resolve_runtime(None), BuiltinRuntime)
    assert isinstance(resolve_runtime("builtin"), BuiltinRuntime)


def test_unknown_runtime() -> None:
    with pytest.raises(ProjectError, match=r"runtime 'nope': no entry point.*known: builtin"):
        resolve_runtime("nope")


def test_duplicate_runtime_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, "twice", "twice")
    monkeypatch.setattr(
        "soev_pipeline.runtime.resolve.entry_points", _distinct_entry_points(tmp_path)
    )
    with pytest.raises(ProjectError, match=r"runtime 'twice': 2 entry points"):
        resolve_runtime("twice")


def _distinct_entry_points(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Entry points as two distributions that name the same runtime differently."""
    from importlib.metadata import EntryPoint

    def fake(group: str):  # type: ignore[no-untyped-def]
        return [
            EntryPoint("twice", "tracked_runtime:Runtime", group),
            EntryPoint("twice", "other_runtime:Runtime", group),
        ]

    return fake


def test_runtime_from_entry_point_publishes_to_its_tracker(
    project_path: Path,
    system: ScriptedSystem,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = _install(tmp_path, monkeypatch, "tracked")
    status = main(["run", "--project", str(project_path), "--runtime", "tracked", "--run-id", "t1"])
    assert status == 0, capsys.readouterr().err
    published = json.loads((site / "published.json").read_text())
    assert published["manifest"]["run_id"] == "t1"
    assert published["manifest"]["runtime"] == "tracked"
    assert "cases" not in published["manifest"]
    assert published["report"]["suites"]["kern"]["cases"] == 4
    assert all(case["split"] == "dev" for case in published["report"]["cases"])


def test_unknown_runtime_from_the_cli(
    project_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--project", str(project_path), "--runtime", "nope"]) == 1
    err = capsys.readouterr().err
    assert "runtime 'nope'" in err and len(err.strip().splitlines()) == 1
