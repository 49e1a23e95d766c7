"""A project with two graded runs, made through the run API in a second (no Dagster).

The project is the full one (tests/support/project.py): a judge, hooks, a corpus, a rubric, and
a test case of each suite that holds `SECRET`. Run `b0` (k = 1) answered well; run `b1`
(k = 2), a day later, answered case kern-001 with a hostile reply (`HOSTILE`) that cites
nothing, so kern-001 regressed; priv-001 answers where it must refuse in both runs (its
judged `behaviour.expected` fails: a verdict to label).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from soev_pipeline.core import (
    Evidence,
    Failure,
    JudgeRequest,
    JudgeResult,
    Turn,
    Usage,
    VariantEvidence,
)
from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import LoadedProject, load
from soev_pipeline.run import RunArchive, build_manifest
from soev_pipeline.run.service import aggregate, grade
from soev_pipeline.view import write_scoring_pages
from tests.support.builders import ScriptedJudge
from tests.support.project import CITED, PRIVACY_MESSAGE, SECRET, write_project

HOSTILE = (
    'Zie <script>document.title="XSS"</script><img src=x onerror="document.title=\'XSS\'">'
    " en </textarea><b>vet</b> {{ 7*7 }}"
)
"""A reply that would run, load or render something if a page ever took it as markup."""

GOOD = (
    'De bezwaartermijn is zes weken, zie artikel 6:7 Awb: "De termijn voor het indienen '
    'van een bezwaarschrift bedraagt zes weken." Bedankt voor uw vraag.'
)
MOMENT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def judge_script(request: JudgeRequest) -> JudgeResult:
    """Answers every judge task: the reply 'answers' (so priv-001 fails), nuggets are
    supported, and the rubric is 'goed' unless the reply is the hostile one."""
    reply = str(request.inputs.get("reply", ""))
    label = {
        "behaviour.expected": "answer",
        "nuggets.coverage": "support",
        "privacy.names": "none",
    }.get(request.task, "fout" if "script" in reply else "goed")
    return JudgeResult(label=label, detail="scripted", model="judge-m", prompt_sha="p" * 64)


def _turn(question: str, reply: str | None, citations: tuple[str, ...] = ()) -> Turn:
    return Turn(
        input=question,
        reply=reply,
        citations=citations,
        usage=Usage(prompt_tokens=40, completion_tokens=12),
        duration_s=0.25,
    )


def evidence_of(loaded: LoadedProject, run: str, attempt: int) -> list[Evidence]:
    """What the assistant of run `run` answered each case of the project, attempt `attempt`."""
    found = []
    for case in loaded.cases():
        citations: tuple[str, ...] = ()
        failure = None
        if case.id == "priv-001":
            reply: str | None = "Jan de Vries woont op de Dorpsstraat 1."
        elif case.id == "priv-t01":
            reply = f"{PRIVACY_MESSAGE} {SECRET}"
        elif case.id == "kern-003":
            reply, failure = None, Failure(code="service_unavailable", detail="storing")
        elif case.id == "kern-001" and run == "b1":
            reply = HOSTILE
        else:
            reply, citations = GOOD, (CITED,)
        if case.id == "kern-t01":
            reply = f"{GOOD} {SECRET}"
        turns = tuple(_turn(question, reply, citations) for question in case.turns)
        if failure is not None:
            turns = (turns[0].model_copy(update={"failure": failure}),)
        variants = tuple(
            VariantEvidence(
                id=variant.id,
                reply=reply,
                citations=citations,
                turns=tuple(_turn(q, reply, citations) for q in variant.turns),
            )
            for variant in case.variants
        )
        found.append(
            Evidence(
                case_id=case.id,
                suite=case.suite,
                split=case.split,
                attempt=attempt,
                turns=turns,
                reply=reply,
                citations=citations,
                refusal_code="privacy" if reply and reply.startswith(PRIVACY_MESSAGE) else None,
                variants=variants,
                started_at=MOMENT,
                finished_at=MOMENT,
            )
        )
    return found


def make_run(
    loaded: LoadedProject,
    runs: Path,
    run_id: str,
    *,
    k: int,
    at: datetime,
    detector: LangidDetector,
    answers: Callable[[LoadedProject, str, int], list[Evidence]] = evidence_of,
) -> RunArchive:
    """Archive, grade and aggregate run `run_id` of `loaded` in `runs`."""
    manifest = build_manifest(
        run_id=run_id,
        project=loaded.project.name,
        suites=[suite.name for suite in loaded.suites],
        split=None,
        k=k,
        cases=list(loaded.cases()),
        shas=loaded.prompt_shas,
        created_at=at,
    )
    archive = RunArchive(runs, run_id)
    archive.create(manifest)
    with archive.evidence_writer() as writer:
        for attempt in range(k):
            for evidence in answers(loaded, run_id, attempt):
                writer.append(evidence)
    scoring = asyncio.run(
        grade(loaded, archive, judge=ScriptedJudge(judge_script), language_detector=detector)
    )
    aggregate(archive, scoring.path)
    archive.commit(scoring.path, write_scoring_pages(loaded, archive, scoring.path))
    return archive


@dataclass
class TwoRuns:
    loaded: LoadedProject
    runs: Path
    b0: RunArchive
    b1: RunArchive

    @property
    def directory(self) -> Path:
        return self.loaded.directory


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory: pytest.TempPathFactory, detector: LangidDetector) -> TwoRuns:
    """The project with runs b0 and b1; tests that write (labels) copy it first."""
    root = tmp_path_factory.mktemp("viewer")
    path = write_project(root / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")
    loaded = load(path)
    runs = root / "p" / "runs"
    b0 = make_run(loaded, runs, "b0", k=1, at=MOMENT, detector=detector)
    b1 = make_run(loaded, runs, "b1", k=2, at=MOMENT + timedelta(days=1), detector=detector)
    return TwoRuns(loaded, runs, b0, b1)


@pytest.fixture
def own_runs(two_runs: TwoRuns, tmp_path: Path) -> TwoRuns:
    """A copy of the two-run project that a test may change."""
    import shutil

    shutil.copytree(two_runs.directory, tmp_path / "p")
    loaded = load(tmp_path / "p" / "project.yaml")
    runs = tmp_path / "p" / "runs"
    return TwoRuns(loaded, runs, RunArchive(runs, "b0"), RunArchive(runs, "b1"))


class Viewer:
    """`python -m soev_pipeline view` in a process of its own, and the URL it printed."""

    def __init__(self, project: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        env = {**os.environ, **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "soev_pipeline", "view", "--project", str(project), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        printed: list[str] = []
        reader = threading.Thread(target=lambda: printed.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout=120)
        assert printed and printed[0].startswith("soev-evals view of "), (
            printed,
            self.process.poll(),
        )
        self.url = printed[0].split(": ", 1)[1].strip()
        self.origin = self.url.split("/?")[0].rstrip("/")

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        try:
            _, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return self.process.returncode, err
