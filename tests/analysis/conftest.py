"""A project with three graded runs over three nights, made through the run API (no Dagster).

The project is the full one (tests/support/project.py): judged kinds, hooks, a corpus, and a
test case of each suite that holds `SECRET`. Runs `n1` (k = 1), `n2` and `n3` (k = 2) are a
night apart; in `n2` case kern-001 got a hostile reply (it flips: passed, failed, passed),
and `n3` was rescored once, so it has two scorings.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from soev_pipeline.core import Evidence, Failure
from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import LoadedProject, load
from soev_pipeline.run import RunArchive
from soev_pipeline.run.service import aggregate, grade
from tests.support.builders import ScriptedJudge
from tests.support.project import write_project
from tests.view.conftest import MOMENT, evidence_of, judge_script, make_run


def nightly_answers(loaded: LoadedProject, run: str, attempt: int) -> list[Evidence]:
    """The answers of the viewer's runs, with the hostile reply of kern-001 in `n2` alone;
    in `n3` the second attempt of kern-002 could not reach the assistant (it did not run)."""
    found = evidence_of(loaded, "b1" if run == "n2" else "b0", attempt)
    if run == "n3" and attempt == 1:
        unreachable = Failure(code="connect_error", detail="connection refused")
        found = [
            evidence.model_copy(
                update={
                    "turns": (evidence.turns[0].model_copy(update={"failure": unreachable}),),
                    "reply": None,
                    "citations": (),
                }
            )
            if evidence.case_id == "kern-002"
            else evidence
            for evidence in found
        ]
    return found


@dataclass
class Nights:
    loaded: LoadedProject
    runs: Path

    @property
    def project_file(self) -> Path:
        return self.loaded.path

    @property
    def directory(self) -> Path:
        return self.loaded.directory

    def archive(self, run_id: str) -> RunArchive:
        return RunArchive(self.runs, run_id)


@pytest.fixture(scope="session")
def nights(tmp_path_factory: pytest.TempPathFactory, detector: LangidDetector) -> Nights:
    """The project with runs n1, n2 and n3 (rescored); tests that write copy it first."""
    root = tmp_path_factory.mktemp("nights")
    path = write_project(root / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")
    loaded = load(path)
    runs = root / "p" / "runs"
    for night, (run_id, k) in enumerate([("n1", 1), ("n2", 2), ("n3", 2)]):
        at = MOMENT + timedelta(days=night)
        make_run(loaded, runs, run_id, k=k, at=at, detector=detector, answers=nightly_answers)
    archive = RunArchive(runs, "n3")
    judge = ScriptedJudge(judge_script)
    scoring = asyncio.run(grade(loaded, archive, judge=judge, language_detector=detector))
    aggregate(archive, scoring.path)
    return Nights(loaded, runs)


@pytest.fixture
def own_nights(nights: Nights, tmp_path: Path) -> Nights:
    """A copy of the project that a test may change."""
    shutil.copytree(nights.directory, tmp_path / "p")
    return Nights(load(tmp_path / "p" / "project.yaml"), tmp_path / "p" / "runs")
