"""The project of the probe tests: the full project of tests/support/project.py, with the
environment its `system` and `judge` sections name."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.project import LoadedProject, load
from tests.calibration.conftest import ENVIRONMENT
from tests.support.project import write_project


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")


@pytest.fixture
def loaded(project: Path) -> LoadedProject:
    return load(project)
