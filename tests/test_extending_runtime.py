"""docs/extending.md, "A runtime provider package", run: its module and entry point installed
as a distribution, then `soev-evals run` and `rescore` with `--runtime mine`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import write_project
from tests.support.cli import invoke
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _blocks(language: str) -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("\n## A runtime provider package\n")
    body = text[start : text.index("\n## ", start + 1)]
    return re.findall(rf"^```{language}\n(.*?)^```$", body, flags=re.MULTILINE | re.DOTALL)


def test_the_guides_runtime_provider_runs_and_rescores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: FakeThreadAPI
) -> None:
    (module,) = _blocks("python")
    (entry_points,) = _blocks("toml")
    site = tmp_path / "site"
    info = site / "my_runtime-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-runtime\nVersion: 0.1\n")
    name, value = re.findall(r"^(\w+) = \"([\w.:]+)\"$", entry_points, flags=re.MULTILINE)[0]
    (info / "entry_points.txt").write_text(f"[soev.evals.runtimes]\n{name} = {value}\n")
    (site / "my_runtime.py").write_text(module, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))

    project = write_project(tmp_path / "p", system.url)
    ran = invoke("run", "--project", project, "--runtime", "mine", "--run-id", "r1")
    assert ran.status == 0, ran.err
    assert system.texts  # the arm of the provider reached the assistant
    published = project.parent / ".soev" / "published" / "r1.json"
    report = json.loads(published.read_text(encoding="utf-8"))  # state_dir was given
    assert report["run_id"] == "r1" and {c["split"] for c in report["cases"]} == {"dev"}
    manifest = json.loads((project.parent / "runs" / "r1" / "manifest.json").read_text())
    assert manifest["runtime"] == "mine"
    asked = len(system.requests)
    assert invoke("rescore", "r1", "--project", project, "--runtime", "mine").status == 0
    assert len(system.requests) == asked
