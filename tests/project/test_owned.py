"""The paths a project owns: what no output flag may replace."""

from __future__ import annotations

from pathlib import Path

from soev_pipeline.core.project import Project
from soev_pipeline.judges.prompts import prompts_dir
from soev_pipeline.project import ProjectPaths, owned_paths


def test_a_project_owns_its_runs_state_files_and_the_prompts(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "kern.yaml").write_text("cases: []\n", encoding="utf-8")
    (tmp_path / "reviews").mkdir()
    (tmp_path / "reviews" / "anna.jsonl").write_text("", encoding="utf-8")
    project_file = tmp_path / "project.yaml"
    project_file.write_text("name: p\n", encoding="utf-8")
    project = Project.model_validate(
        {
            "name": "p",
            "system": {"kind": "chat-completions", "base_url": "http://127.0.0.1:9/"},
            "suites": [{"name": "kern", "files": "suites/*.yaml"}],
            "corpus": "corpus.jsonl",
            "hooks": "pkg.hooks",
            "labels": "reviews/*.jsonl",
        }
    )
    owned = {
        entry.path: entry.what for entry in owned_paths(ProjectPaths.of(project_file), project)
    }
    root = tmp_path.resolve()
    assert owned[root / "runs"] == "the runs folder"
    assert owned[root / ".soev"] == "the project's state folder"
    assert owned[root / "project.yaml"] == "the project file"
    assert owned[root / "sealed-test.yaml"] == "the seal of the test cases"
    assert owned[root / "suites" / "kern.yaml"] == "a file of suite 'kern'"
    assert owned[root / "corpus.jsonl"] == "the corpus lookup"
    assert owned[root / "pkg" / "hooks.py"] == "the hooks module"
    assert owned[root / "reviews"] == "the labels folder"
    assert owned[root / "reviews" / "anna.jsonl"] == "a label file"
    assert owned[prompts_dir()] == "the judge prompts"
    assert root / "report.html" not in owned
