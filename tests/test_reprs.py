"""What holds a whole project prints as a line: asyncio, loggers and debuggers format it."""

from __future__ import annotations

from pathlib import Path

from soev_pipeline.api import run_sync
from soev_pipeline.project import load
from tests.conftest import write_project


def test_run_sync_never_formats_its_result() -> None:
    formatted: list[str] = []

    class Large:
        def __repr__(self) -> str:
            formatted.append("repr")
            return "Large()"

    async def work() -> Large:
        return Large()

    assert isinstance(run_sync(work()), Large)
    assert formatted == []  # asyncio.run formats its task's result on the way out


def test_a_loaded_project_prints_its_path_and_suites(tmp_path: Path) -> None:
    loaded = load(write_project(tmp_path / "project", "http://127.0.0.1:9/"))
    shown = repr(loaded)
    assert shown == f"LoadedProject(path={str(loaded.path)!r}, suites=['kern', 'privacy'])"
