"""The wheel carries the Dutch catalog and speaks Dutch with no build step of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SPEAK = """
import soev_pipeline
from soev_pipeline.view import i18n
with i18n.speaking("nl"):
    print(soev_pipeline.__file__, i18n.gettext("Runs"), i18n.term("not_applicable"))
"""


def test_the_wheel_holds_the_catalog_and_pages_made_from_it_are_dutch(tmp_path: Path) -> None:
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = subprocess.run(
        [*pip, "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("soev_pipeline-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "unpacked")
    assert "soev_pipeline/view/locales/nl/LC_MESSAGES/messages.po" in names
    assert not any(name.endswith(".mo") for name in names)  # compiled when first used
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "unpacked")}
    spoken = subprocess.run(
        [sys.executable, "-c", SPEAK], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert spoken.returncode == 0, spoken.stderr
    where, said = spoken.stdout.split(" ", 1)
    assert where.startswith(str(tmp_path / "unpacked"))
    assert said.strip() == "Testrondes niet van toepassing"
