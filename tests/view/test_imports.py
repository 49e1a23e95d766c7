"""The viewer and the label lines are domain code: they import without dagster, and their
packages list their names in a sorted `__all__`."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from tests.test_public_api import isort_key


@pytest.mark.parametrize("package", ["calibration", "view"])
def test_all_is_sorted_and_every_name_in_it_exists(package: str) -> None:
    module = importlib.import_module(f"soev_pipeline.{package}")
    assert module.__all__ == sorted(set(module.__all__), key=isort_key)
    assert all(hasattr(module, name) for name in module.__all__)


def test_the_viewer_imports_without_dagster() -> None:
    code = (
        "import sys, soev_pipeline.calibration, soev_pipeline.view, soev_pipeline.view.app; "
        "sys.exit('dagster' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr or "the viewer imports dagster"


def test_the_run_command_imports_neither_the_report_nor_the_web_application() -> None:
    """`soev-evals run` imports the HTML report's code on its start-up thread while the
    first requests are in flight, and never the web application."""
    code = (
        "import sys, soev_pipeline.api, soev_pipeline.cli.main, soev_pipeline.cli.commands; "
        "heavy = [m for m in ('soev_pipeline.view.html_report', 'soev_pipeline.view.app', "
        "'starlette', 'jinja2', 'matplotlib') if m in sys.modules]; "
        "sys.exit(str(heavy) if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
