"""Hostile input through the CLI: what a broken, cut, huge, malicious or concurrent world does
to `soev-evals`, one test per class (docs/runs.md "One command per run", "Interruptions" and
the evidence rules; docs/project.md "What the loader refuses"; docs/systems.md on secrets
and frame sizes).

The projects here are small and made on the spot. A command that must be interrupted,
killed or run twice at once is a `python -m soev_pipeline` subprocess with a Dagster
instance of its own, so that what it leaves behind reaches no other test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from soev_pipeline.orchestration.instance import ensure_instance
from tests.support.cli import Result, invoke
from tests.support.project import dump, edit_yaml
from tests.support.thread_api import HANG, FakeThreadAPI, Reply, Response, frame, problem

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CASES = ("h-00", "h-01", "h-02")
SUITE = "suites/h.yaml"


def question(case_id: str) -> str:
    return f"Vraag {case_id} over de bezwaartermijn?"


def answer(text: str, history: list[str]) -> Reply:
    return Reply(f"Antwoord op {text}")


def make_project(
    root: Path,
    url: str,
    *,
    cases: tuple[str, ...] = CASES,
    system: dict[str, Any] | None = None,
    criteria: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Path:
    """A one-suite project of `cases` in `root`; returns its project.yaml."""
    dump(
        root / SUITE,
        {
            "suite": "h",
            "criteria": [{"kind": "run.no_failure", "gate": True}, *(criteria or [])],
            "cases": [{"id": case_id, "input": question(case_id)} for case_id in cases],
        },
    )
    project = {
        "name": "vijandig",
        "system": {"base_url": url, "agent": "a", "max_retries": 0, **(system or {})},
        "suites": [{"name": "h", "files": SUITE}],
        **extra,
    }
    dump(root / "project.yaml", project)
    return root / "project.yaml"


def refused(result: Result, *mentions: str) -> str:
    """The one line of a command that stopped with status 1, naming each of `mentions`."""
    assert result.status == 1, result.text
    line = result.error_line()
    for mention in mentions:
        assert mention in line, f"{mention!r} not in {line!r}"
    return line


def pairs(run: Path) -> Counter[tuple[str, int]]:
    """How often each (case, attempt) pair is in the run's evidence."""
    lines = (run / "evidence.jsonl").read_text(encoding="utf-8").splitlines()
    return Counter((raw["case_id"], raw["attempt"]) for raw in map(json.loads, lines))


def every_pair(k: int, cases: tuple[str, ...] = CASES) -> Counter[tuple[str, int]]:
    return Counter((case_id, attempt) for case_id in cases for attempt in range(k))


def wait_for(
    condition: Callable[[], bool], process: subprocess.Popen[str] | None, what: str
) -> None:
    """Wait until `condition` holds; fail when `process` ends first or after 60 s."""
    deadline = time.monotonic() + 60
    while not condition():
        if process is not None and process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"the command ended ({process.returncode}) before {what}:\n{err}")
        assert time.monotonic() < deadline, f"no {what} within 60 s"
        time.sleep(0.02)


class Commands:
    """`python -m soev_pipeline` subprocesses; any still running at the end are killed."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: object, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "soev_pipeline", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
        self.started.append(process)
        return process

    @staticmethod
    def finish(process: subprocess.Popen[str]) -> Result:
        out, err = process.communicate(timeout=60)
        return Result(process.returncode, out, err)

    def interrupt(self, process: subprocess.Popen[str], sig: int = signal.SIGINT) -> Result:
        process.send_signal(sig)
        if sig != signal.SIGKILL:
            return self.finish(process)
        # a killed process writes nothing more, and the helpers that Dagster started to copy
        # its step output (orphans now) may hold its pipes open: wait for it, not for them
        process.wait(timeout=60)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        return Result(process.returncode, "", "")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture
def commands() -> Iterator[Commands]:
    running = Commands()
    yield running
    running.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Dagster instance of the test's own, for the commands it starts and kills, made as a
    project's first command makes it (the test reads it while the commands run)."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return ensure_instance(tmp_path / "dagster")


class Gate:
    """An assistant that answers the first `free` turns at once and holds every later turn
    until `gate` is set (at most 30 s, so that a broken test cannot hang the fake)."""

    def __init__(self, free: int = 0) -> None:
        self.free = free
        self.gate = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, text: str, history: list[str]) -> Reply:
        with self._lock:
            self.free -= 1
            held = self.free < 0
        if held:
            self.gate.wait(30)
        return Reply(f"Antwoord op {text}")


# ---------------------------------------------------------------------- a finished run

WAITING_HOOKS = '''\
"""A criterion that, when HOSTILE_WAIT names a file, touches it and then waits (at most
120 s, a safety valve on a busy machine) until the file NAME.release exists."""

import asyncio
import os
from pathlib import Path

from soev_pipeline.criteria import Builtin, NoParams, outcome


async def wait(case, evidence, *, params, ctx):
    marker = os.environ.get("HOSTILE_WAIT")
    if marker:
        Path(marker).touch()
        for _ in range(6000):
            if Path(marker + ".release").exists():
                break
            await asyncio.sleep(0.02)
    return outcome(passed=True)


CRITERIA = [Builtin("custom.wait", NoParams, wait)]
'''

FINISHED, K = "done", 3


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the finished run `done` (3 cases, k=3); its system is gone."""
    root = tmp_path_factory.mktemp("finished") / "p"
    with FakeThreadAPI(answer) as system:
        project = make_project(root, system.url, criteria=[{"kind": "custom.wait"}], hooks="hooks")
        (root / "hooks.py").write_text(WAITING_HOOKS, encoding="utf-8")
        done = invoke("run", "--project", project, "--run-id", FINISHED, "--k", K)
        assert done.status == 0, done.err
    return project


def copy_of(project: Path, tmp_path: Path, url: str | None = None) -> Path:
    """A copy of `project` with its runs, speaking to the system at `url` if given."""
    shutil.copytree(project.parent, tmp_path / "p")
    copied = tmp_path / "p" / "project.yaml"
    if url is not None:
        edit_yaml(copied, lambda data: data["system"].update(base_url=url))
    return copied


# ---------------------------------------------------------------------- 1. the run lock


def test_a_second_resume_is_refused_while_the_first_holds_the_run(
    finished: Path, tmp_path: Path, home: Path, commands: Commands
) -> None:
    held = Gate()
    with FakeThreadAPI(held) as system:
        project = copy_of(finished, tmp_path, system.url)
        edit_yaml(project, lambda data: data["system"].update(concurrency=2))
        run = project.parent / "runs" / FINISHED
        lines = (run / "evidence.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (run / "evidence.jsonl").write_text("".join(lines[::3]), encoding="utf-8")
        missing = every_pair(K) - pairs(run)
        assert sum(missing.values()) == 6
        try:
            both = [commands.start("run", "--project", project, "--resume", FINISHED) for _ in "ab"]
            # the one that gets the lock is held by the system until the other has ended
            wait_for(lambda: any(p.poll() is not None for p in both), None, "either to end")
            loser, winner = sorted(both, key=lambda process: process.poll() is None)
            refused_one = commands.finish(loser)
        finally:
            held.gate.set()
        done = commands.finish(winner)

    assert done.status == 0, done.err
    line = refused(refused_one, "is in use by soev-evals", f"pid {winner.pid}")
    assert f"run {FINISHED!r}" in line
    assert pairs(run) == every_pair(K)
    opened = Counter(request.json()["input"]["text"] for request in system.routed("open"))
    assert opened == Counter(question(case_id) for case_id, _ in missing.elements())


def test_a_second_rescore_is_refused_while_the_first_grades(
    finished: Path, tmp_path: Path, home: Path, commands: Commands
) -> None:
    project = copy_of(finished, tmp_path)
    marker = tmp_path / "grading"
    both = [
        commands.start("rescore", FINISHED, "--project", project, env={"HOSTILE_WAIT": str(marker)})
        for _ in "ab"
    ]
    try:
        # the one that gets the lock grades until the other has ended
        wait_for(lambda: any(p.poll() is not None for p in both), None, "either to end")
        loser, winner = sorted(both, key=lambda process: process.poll() is None)
        refused_one = commands.finish(loser)
    finally:
        Path(f"{marker}.release").touch()
    done = commands.finish(winner)
    assert done.status == 0, done.err
    refused(refused_one, "is in use by soev-evals rescore", f"pid {winner.pid}")
    scorings = sorted((project.parent / "runs" / FINISHED / "scorings").iterdir())
    assert [path.name for path in scorings] == ["0001", "0002"]
    for scoring in scorings:
        assert (scoring / "report.json").is_file(), scoring


def test_a_run_refused_before_it_starts_leaves_no_folder(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTILE_UNSET", raising=False)
    with FakeThreadAPI(answer) as system:
        project = copy_of(finished, tmp_path, system.url)
        edit_yaml(project, lambda data: data["system"].update(api_key_env="HOSTILE_UNSET"))
        result = invoke("run", "--project", project, "--run-id", "fresh")
    refused(result, "HOSTILE_UNSET")
    assert not (project.parent / "runs" / "fresh").exists()
    assert system.requests == []


# ---------------------------------------------------------------------- 2, 3. YAML


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    anchors = ["            p0: &a0 [" + ", ".join(["boem"] * 10) + "]"]
    anchors += [
        f"            p{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 10)
    ]
    text = "\n".join(
        [
            "suite: h",
            "cases:",
            "  - id: h-00",
            "    input: Een vraag over de bezwaartermijn?",
            "    criteria:",
            "      - kind: reply.max_length",
            "        max: 100",
            "        params:",
            *anchors,
            "",
        ]
    )
    assert len(text.encode()) < 2048
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    suite = project.parent / SUITE
    suite.write_text(text, encoding="utf-8")
    refused(invoke("run", "--project", project, "--run-id", "r"), str(suite), "aliases expand")


def test_a_repeated_key_is_refused_with_both_lines(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    suite = project.parent / SUITE
    suite.write_text(
        "suite: h\ncases:\n- id: h-00\n  input: Eerste vraag?\n  input: Tweede vraag?\n",
        encoding="utf-8",
    )
    refused(
        invoke("run", "--project", project),
        f"{suite}: line 5, column 3: duplicate key 'input' (first on line 4)",
    )

    suite.unlink()
    make_project(tmp_path / "p", "http://127.0.0.1:9/")
    text = project.read_text(encoding="utf-8")
    assert text.startswith("name: vijandig\n")
    project.write_text(text + "name: tweede\n", encoding="utf-8")
    second = len(text.splitlines()) + 1
    line = refused(invoke("run", "--project", project), f"{project}: line {second}")
    assert "duplicate key 'name' (first on line 1)" in line


@pytest.mark.parametrize(
    "sources",
    [{"required": [[""]]}, {"forbidden": ["//artikel 6:7 //"]}],
    ids=["empty id", "empty and padded segments"],
)
def test_a_malformed_source_id_is_refused_at_load(tmp_path: Path, sources: dict[str, Any]) -> None:
    with FakeThreadAPI(answer) as system:
        project = make_project(tmp_path / "p", system.url)
        suite = project.parent / SUITE
        edit_yaml(suite, lambda data: data["cases"][1].update(sources=sources))
        result = invoke("run", "--project", project, "--run-id", "r")
    refused(result, str(suite), "h-01", "sources")
    assert system.requests == []
    assert not (project.parent / "runs" / "r").exists()


# ---------------------------------------------------------------------- 4. secrets

CANARY = "tok-CANARY-9f8e7d"


class Echo(FakeThreadAPI):
    """A system that quotes the Authorization header it was sent, as `heard`."""

    heard = ""

    async def handle(self, request: Any) -> Any:
        Echo.heard = request.headers.get("authorization", "")
        return await super().handle(request)


def echoing(text: str, history: list[str]) -> Reply | Response | list[Any]:
    if "h-401" in text:
        return problem(401, "unauthorized", f"token {Echo.heard} is not valid here")
    if "h-500" in text:
        return problem(500, "internal", f"crashed while handling {Echo.heard}")
    if "h-fail" in text:
        return [
            frame("status", {"state": "running"}, position=1),
            frame(
                "failure", {"code": "upstream", "detail": f"upstream saw {Echo.heard}"}, position=2
            ),
            frame("status", {"state": "idle"}, position=3),
        ]
    return Reply(f"Antwoord op {text}")


def test_an_echoed_token_is_recorded_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SOEV_API_KEY", CANARY)
    # without DAGSTER_HOME the instance is the project's own .soev/dagster
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    cases = ("h-401", "h-500", "h-fail", "h-ok")
    with Echo(echoing, token=CANARY) as system:
        project = make_project(
            tmp_path / "p", system.url, cases=cases, system={"api_key_env": "SOEV_API_KEY"}
        )
        result = invoke("run", "--project", project, "--run-id", "r")
        report = invoke("report", "r", "--project", project, "--json")
    assert Echo.heard == f"Bearer {CANARY}"
    assert result.status == 0, result.err
    printed = capfd.readouterr()
    for text in (result.text, report.text, printed.out, printed.err):
        assert CANARY not in text
    root = project.parent
    assert any((root / ".soev" / "dagster").rglob("*.db")), "the instance is not in the project"
    files = [path for path in root.rglob("*") if path.is_file()]
    assert {"evidence.jsonl", "verdicts.jsonl", "report.json"} <= {path.name for path in files}
    for path in files:
        assert CANARY.encode() not in path.read_bytes(), path
    evidence = {
        raw["case_id"]: raw
        for raw in map(
            json.loads, (root / "runs" / "r" / "evidence.jsonl").read_text().splitlines()
        )
    }
    for case_id in ("h-401", "h-500", "h-fail"):
        (failure,) = [turn["failure"] for turn in evidence[case_id]["turns"]]
        assert "Bearer [redacted]" in failure["detail"], (case_id, failure)
    assert evidence["h-ok"]["turns"][0]["failure"] is None


# ---------------------------------------------------------------------- 5. Ctrl-C


def one_line(result: Result, status: int = 130) -> str:
    assert result.status == status, result.text
    return result.error_line()


PACKAGE_FRAME = r'File "[^"]*soev_pipeline[^"]*\.py"'
"""A traceback frame in a module of the package: the command's own code had started."""


def test_ctrl_c_at_the_start_is_one_line(tmp_path: Path, home: Path, commands: Commands) -> None:
    """SIGINT 0, 2, 4, ... ms after the start (by 50 ms past 0.3 s, for a busy machine whose
    interpreter starts slowly), each time to a new run, until eight in a row were handled:
    once the interpreter runs the command's first line, each must end with exit status 130
    and one line `interrupted` (later on, `interrupted` with what is archived and how to go
    on: `interrupted before the run was archived; nothing to resume`). A
    signal that comes before that (the interpreter's own start-up: no frame of the package
    in its traceback) is not the command's to handle, and a run that ended before its
    signal came says nothing about it."""
    with FakeThreadAPI(answer) as system:
        project = make_project(tmp_path / "p", system.url)
        handled, wrong, delay, number = 0, [], 0.0, 0
        while handled < 8 and delay < 3:
            number += 1
            process = commands.start("run", "--project", project, "--run-id", f"r{number}")
            time.sleep(delay)
            result = commands.interrupt(process)
            lines = [line for line in result.err.splitlines() if line.strip()]
            told = len(lines) == 1 and lines[0].startswith("interrupted")
            if result.status == 130 and told and result.out == "":
                handled += 1
            elif re.search(PACKAGE_FRAME, result.err) or result.status == 130:
                wrong.append((round(delay, 3), result.status, result.err))
                handled = 0
            delay += 0.002 if delay < 0.3 else 0.05
    assert wrong == []
    assert handled == 8


def test_ctrl_c_while_a_rescore_grades_is_one_line(
    finished: Path, tmp_path: Path, home: Path, commands: Commands
) -> None:
    project = copy_of(finished, tmp_path)
    marker = tmp_path / "grading"
    process = commands.start(
        "rescore", FINISHED, "--project", project, env={"HOSTILE_WAIT": str(marker)}
    )
    wait_for(marker.exists, process, "grading")
    line = one_line(commands.interrupt(process))
    assert "resume" not in line
    scorings = project.parent / "runs" / FINISHED / "scorings"
    assert [path.name for path in scorings.iterdir() if (path / "report.json").exists()] == ["0001"]


BLOCKING_RUNTIME = '''\
"""A runtime provider that touches HOSTILE_OPENING, then takes a minute to open."""

import asyncio
import os
from contextlib import asynccontextmanager
from pathlib import Path


class Runtime:
    @asynccontextmanager
    async def open(self, loaded, *, operation):
        Path(os.environ["HOSTILE_OPENING"]).touch()
        await asyncio.sleep(60)
        yield None
'''


def test_ctrl_c_before_the_run_is_archived_says_there_is_nothing_to_resume(
    tmp_path: Path, home: Path, commands: Commands
) -> None:
    site = tmp_path / "site"
    info = site / "hostile_runtime-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-runtime\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[soev.evals.runtimes]\nslow = hostile_runtime_mod:Runtime\n"
    )
    (site / "hostile_runtime_mod.py").write_text(BLOCKING_RUNTIME)
    marker = tmp_path / "opening"
    with FakeThreadAPI(answer) as system:
        project = make_project(tmp_path / "p", system.url, runtime="slow")
        process = commands.start(
            "run",
            "--project",
            project,
            "--run-id",
            "r",
            env={"PYTHONPATH": str(site), "HOSTILE_OPENING": str(marker)},
        )
        wait_for(marker.exists, process, "the runtime opening")
        line = one_line(commands.interrupt(process))
    assert "nothing to resume" in line and "resume with" not in line
    assert not (project.parent / "runs" / "r").exists()
    assert system.requests == []


def start_held_run(
    tmp_path: Path, commands: Commands, system: FakeThreadAPI
) -> tuple[Path, subprocess.Popen[str]]:
    """A run `r` whose first attempt is archived and whose second is held by the system."""
    project = make_project(tmp_path / "p", system.url, system={"concurrency": 1})
    process = commands.start("run", "--project", project, "--run-id", "r")
    evidence = project.parent / "runs" / "r" / "evidence.jsonl"
    wait_for(
        lambda: evidence.exists() and evidence.read_bytes().endswith(b"\n"), process, "evidence"
    )
    return project, process


@pytest.mark.parametrize(
    ("sig", "said", "status"),
    [
        (signal.SIGINT, "interrupted", 130),
        (signal.SIGTERM, "stopped by SIGTERM", 143),
        (signal.SIGHUP, "stopped by SIGHUP", 129),
    ],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_a_signal_after_attempts_are_archived_says_how_to_resume(
    tmp_path: Path, home: Path, commands: Commands, sig: int, said: str, status: int
) -> None:
    """SIGTERM (CI runners, Kubernetes) and SIGHUP end a run as Ctrl-C does: one line with
    the resume hint, the evidence intact, nothing recorded in Dagster as if it finished."""
    held = Gate(free=1)
    with FakeThreadAPI(held) as system:
        try:
            project, process = start_held_run(tmp_path, commands, system)
            line = one_line(commands.interrupt(process, sig), status)
        finally:
            held.gate.set()
    assert line.startswith(f"{said}: 1 attempt"), line
    assert f"archived in {project.parent / 'runs' / 'r'}; " in line
    assert line.endswith("; resume with: soev-evals run --resume r"), line
    assert sum(pairs(project.parent / "runs" / "r").values()) == 1
    assert recorded_runs(home) == []


def recorded_runs(home: Path) -> list[str]:
    """The run partitions of the instance `home` that have a report."""
    if not (home / "dagster.yaml").exists():
        return []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("report"), limit=100).records
        return sorted({record.partition_key or "" for record in records})


# ---------------------------------------------------------------------- 6. evidence lines


def cut_line(line: bytes) -> bytes:
    return line[: len(line) // 2]


def not_utf8(line: bytes) -> bytes:
    return b"\xff\xfe{" + line[1:]


@pytest.mark.parametrize("damage", [cut_line, not_utf8], ids=["cut", "not UTF-8"])
def test_a_broken_last_evidence_line_is_ignored_and_then_removed(
    finished: Path, tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    with FakeThreadAPI(answer) as system:
        project = copy_of(finished, tmp_path, system.url)
        evidence = project.parent / "runs" / FINISHED / "evidence.jsonl"
        lines = evidence.read_bytes().splitlines(keepends=True)
        evidence.write_bytes(b"".join(lines[:-1]) + damage(lines[-1]))
        rescored = invoke("rescore", FINISHED, "--project", project)
        assert rescored.status == 0, rescored.err
        assert system.requests == []
        resumed = invoke("run", "--resume", FINISHED, "--project", project)
    assert resumed.status == 0, resumed.err
    assert len(system.routed("open")) == 1
    data = evidence.read_bytes()
    assert data.endswith(b"\n") and data.startswith(b"".join(lines[:-1]))
    assert pairs(evidence.parent) == every_pair(K)


def test_a_broken_line_amid_the_evidence_stops_a_rescore(finished: Path, tmp_path: Path) -> None:
    project = copy_of(finished, tmp_path)
    evidence = project.parent / "runs" / FINISHED / "evidence.jsonl"
    lines = evidence.read_bytes().splitlines(keepends=True)
    evidence.write_bytes(b"".join([*lines[:2], b'{"case_id": "h-0\n', *lines[2:]]))
    refused(invoke("rescore", FINISHED, "--project", project), str(evidence), "line 3")


def test_a_rescore_stopped_by_damage_leaves_no_scoring_behind(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    run = project.parent / "runs" / FINISHED
    first = (run / "evidence.jsonl").read_bytes().splitlines(keepends=True)[0]
    with (run / "evidence.jsonl").open("ab") as stream:
        stream.write(b"kapot\n" + first)
    assert invoke("rescore", FINISHED, "--project", project).status == 1
    assert [path.name for path in (run / "scorings").iterdir()] == ["0001"]


# ---------------------------------------------------------------------- 7. not UTF-8


def _in_project_yaml(project: Path) -> Path:
    project.write_bytes(project.read_bytes().replace(b"vijandig", b"vijand\xffig"))
    return project


def _in_suite(project: Path) -> Path:
    suite = project.parent / SUITE
    suite.write_bytes(suite.read_bytes().replace(b"Vraag h-01", b"Vraag h-\xff01"))
    return suite


def _in_corpus(project: Path) -> Path:
    corpus = project.parent / "corpus.jsonl"
    units = [{"id": f"BWBR1/artikel-{n}", "text": f"Tekst {n}."} for n in (1, 2)]
    corpus.write_bytes(
        "".join(json.dumps(unit) + "\n" for unit in units)
        .encode()
        .replace(b"Tekst 2", b"T\xffekst 2")
    )
    edit_yaml(project, lambda data: data.update(corpus="corpus.jsonl"))
    return corpus


@pytest.mark.parametrize(
    "spoil", [_in_project_yaml, _in_suite, _in_corpus], ids=["project", "suite", "corpus"]
)
def test_a_file_that_is_not_utf8_is_named_with_the_byte(
    tmp_path: Path, spoil: Callable[[Path], Path]
) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    spoiled = spoil(project)
    offset = spoiled.read_bytes().index(b"\xff")
    line = refused(invoke("run", "--project", project), str(spoiled), f"byte {offset}", "not UTF-8")
    if spoiled.name == "corpus.jsonl":
        assert "line 2" in line


# ---------------------------------------------------------------------- 8. hooks


@pytest.mark.parametrize(
    ("source", "mention"),
    [
        ('"""Hooks that fail."""\n\nraise ValueError("kapot")\n', "ValueError: kapot"),
        ('"""Hooks that do not parse."""\n\ndef kapot(:\n    pass\n', "SyntaxError"),
        ('"""Hooks that quit."""\nimport sys\nsys.exit(4)\n', "sys.exit(4)"),
        ('"""Hooks that need more."""\n\nimport bestaat_echt_niet_42\n', "bestaat_echt_niet_42"),
    ],
    ids=["raises", "syntax error", "sys.exit", "missing import"],
)
def test_hooks_that_fail_to_import_name_their_line(
    tmp_path: Path, source: str, mention: str
) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/", hooks="vijand_hooks")
    hooks = project.parent / "vijand_hooks.py"
    hooks.write_text(source, encoding="utf-8")
    line = refused(invoke("run", "--project", project), "vijand_hooks.py:3: hooks: ", mention)
    assert str(hooks.resolve()) + ":3" in line or str(hooks) + ":3" in line


def test_hooks_that_name_a_missing_module(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/", hooks="nergens_hooks")
    refused(invoke("run", "--project", project), str(project), "hooks", "nergens_hooks")


# ---------------------------------------------------------------------- 9. a huge frame


@pytest.mark.parametrize(
    ("limit", "size"), [(None, 9 * 1024 * 1024), (64 * 1024, 96 * 1024)], ids=["default", "set"]
)
def test_a_frame_past_the_limit_fails_the_turn_at_once(
    tmp_path: Path, limit: int | None, size: int
) -> None:
    def huge(text: str, history: list[str]) -> list[Any]:
        head = b'id: 2\nevent: model_output\ndata: {"content": "'
        chunk = b"a" * (1024 * 1024 if size > 1024 * 1024 else size)
        body = [chunk] * (size // len(chunk))
        # the frame never ends: only a reader that stops at the limit gets past it
        return [frame("status", {"state": "running"}, position=1), head, *body, HANG]

    system_config: dict[str, Any] = {"timeout_s": 30}
    if limit is not None:
        system_config["max_frame_bytes"] = limit
    with FakeThreadAPI(huge) as system:
        project = make_project(tmp_path / "p", system.url, cases=("h-00",), system=system_config)
        began = time.monotonic()
        result = invoke("run", "--project", project, "--run-id", "r")
        took = time.monotonic() - began
    assert result.status == 0, result.err
    (line,) = (project.parent / "runs" / "r" / "evidence.jsonl").read_text().splitlines()
    (turn,) = json.loads(line)["turns"]
    assert turn["failure"]["code"] == "malformed_frame", turn["failure"]
    assert took < 20


# ---------------------------------------------------------------------- 10. paths


def _absolute_glob(project: Path) -> tuple[Path, tuple[str, ...]]:
    elsewhere = project.parent.parent / "elders"
    shutil.copytree(project.parent / "suites", elsewhere)
    glob = str(elsewhere / "*.yaml")
    edit_yaml(project, lambda data: data["suites"][0].update(files=glob))
    return project, ("files", "absolute path")


def _glob_out(project: Path) -> tuple[Path, tuple[str, ...]]:
    shutil.copytree(project.parent / "suites", project.parent.parent / "elders")
    edit_yaml(project, lambda data: data["suites"][0].update(files="../elders/*.yaml"))
    return project, ("files", "outside the project directory")


def _corpus_out(project: Path) -> tuple[Path, tuple[str, ...]]:
    unit = {"id": "BWBR1/artikel-1", "text": "Tekst."}
    (project.parent.parent / "corpus.jsonl").write_text(json.dumps(unit) + "\n")
    edit_yaml(project, lambda data: data.update(corpus="../corpus.jsonl"))
    return project, ("corpus", "outside the project directory")


def _rubric_link(project: Path) -> tuple[Path, tuple[str, ...]]:
    (project.parent / "rubrics").mkdir()
    (project.parent / "rubrics" / "r.md").symlink_to("/etc/passwd")
    edit_yaml(
        project,
        lambda data: data.update(judge={"base_url": "http://127.0.0.1:9/v1/", "model": "m"}),
    )
    criterion = {
        "kind": "rubric.judge",
        "rubric": "rubrics/r.md",
        "labels": ["goed", "fout"],
        "pass_labels": ["goed"],
    }
    suite = project.parent / SUITE
    edit_yaml(suite, lambda data: data["cases"][0].update(criteria=[criterion]))
    return suite, ("criteria[", "rubrics/r.md", "outside the project directory")


@pytest.mark.parametrize(
    "lead_out",
    [_absolute_glob, _glob_out, _corpus_out, _rubric_link],
    ids=["absolute glob", "glob with ..", "corpus with ..", "rubric symlink"],
)
def test_a_path_that_leads_out_of_the_project_is_refused(
    tmp_path: Path, lead_out: Callable[[Path], tuple[Path, tuple[str, ...]]]
) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    named, mentions = lead_out(project)
    line = refused(invoke("run", "--project", project), str(named), *mentions)
    assert "root:" not in line  # nothing of /etc/passwd


def test_a_rubric_that_leads_out_names_its_case_and_criterion(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    suite, _ = _rubric_link(project)
    refused(invoke("run", "--project", project), str(suite), "'h-00'", "criteria[0]")


# ---------------------------------------------------------------------- 11. duplicate ids


def test_a_duplicate_case_id_names_the_second_file_first(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", "http://127.0.0.1:9/")
    edit_yaml(project, lambda data: data["suites"][0].update(files="suites/h/*.yaml"))
    first, second = (
        project.parent / "suites" / "h" / "a.yaml",
        project.parent / "suites" / "h" / "b.yaml",
    )
    for path, case_ids in ((first, ["h-00", "h-01"]), (second, ["h-02", "h-01"])):
        dump(path, {"suite": "h", "cases": [{"id": c, "input": question(c)} for c in case_ids]})
    line = refused(invoke("run", "--project", project), "h-01", "also in")
    assert line.index(str(second)) < line.index("also in") < line.index(str(first)), line


# ---------------------------------------------------------------------- 12. a damaged report


def test_a_report_that_does_not_parse_is_named(finished: Path, tmp_path: Path) -> None:
    project = copy_of(finished, tmp_path)
    report = project.parent / "runs" / FINISHED / "scorings" / "0001" / "report.json"
    report.write_text("{not json", encoding="utf-8")
    refused(invoke("report", FINISHED, "--project", project), str(report))


# ---------------------------------------------------------------------- 13. kill -9


def test_a_run_killed_with_sigkill_is_resumed_and_then_recorded(
    tmp_path: Path, home: Path, commands: Commands
) -> None:
    held = Gate(free=1)
    with FakeThreadAPI(held) as system:
        try:
            project, process = start_held_run(tmp_path, commands, system)
            killed = commands.interrupt(process, signal.SIGKILL)
            assert recorded_runs(home) == []
        finally:
            held.gate.set()
        resumed = invoke("run", "--project", project, "--resume", "r")
    assert killed.status == -signal.SIGKILL
    assert resumed.status == 0, resumed.err
    assert pairs(project.parent / "runs" / "r") == every_pair(1)
    assert recorded_runs(home) == ["r"]
