"""The run archive: streaming evidence, a cut last line, scorings, and resuming a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from soev_pipeline.core import Evidence
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.secrets import REDACTED, forget_secrets, register_secret
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.run import RunArchive, build_manifest, check_run_id, new_run_id
from tests.conftest import write_project
from tests.support.moto import S3
from tests.support.thread_api import FakeThreadAPI, Reply

REPO = Path(__file__).resolve().parents[2]


def _evidence(case_id: str, attempt: int) -> Evidence:
    now = datetime.now(UTC)
    return Evidence(
        case_id=case_id, suite="s", split="dev", attempt=attempt, started_at=now, finished_at=now
    )


@pytest.fixture(params=["local", "s3"])
def runs(request: pytest.FixtureRequest, tmp_path: Path) -> RunsDir:
    """A runs folder of each store: the contract tests below hold for both."""
    if request.param == "local":
        return tmp_path
    s3: S3 = request.getfixturevalue("s3")
    return s3.url()


def _archive(tmp_path: RunsDir) -> RunArchive:
    archive = RunArchive(tmp_path, "r1")
    manifest = build_manifest(
        run_id="r1", project="p", suites=["s"], split=None, k=1, cases=[], shas={}
    )
    archive.create(manifest)
    return archive


def test_run_ids() -> None:
    assert check_run_id("nightly-20261129t020000z") == "nightly-20261129t020000z"
    for bad in ("", "Upper", "a,b", "a|b", "-start", "a b", "x" * 200):
        with pytest.raises(ProjectError):
            check_run_id(bad)
    first = new_run_id(datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC))
    assert first == "20260102t030405.006z" and check_run_id(first)
    assert new_run_id(datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC)) > first


def test_evidence_streams_and_a_cut_line_is_ignored(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    with archive.evidence_writer() as writer:
        writer.append(_evidence("a", 0))
        writer.append(_evidence("b", 0))
    with archive.evidence_path.open("a", encoding="utf-8") as file:
        file.write(_evidence("c", 0).model_dump_json()[:40])
    assert [e.case_id for e in archive.iter_evidence()] == ["a", "b"]
    assert archive.completed() == {("a", 0), ("b", 0)}
    assert archive.count_attempts() == 2
    with archive.evidence_writer() as writer:
        writer.append(_evidence("c", 0))
    assert [e.case_id for e in archive.iter_evidence()] == ["a", "b", "c"]
    lines = archive.evidence_path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line) for line in lines)


def _replied(case_id: str, attempt: int, reply: str) -> Evidence:
    return _evidence(case_id, attempt).model_copy(update={"reply": reply})


def test_an_attempt_is_reported_with_its_line_as_archived(runs: RunsDir) -> None:
    """What a grading of the attempts as they are archived reads: the archived bytes, a
    secret redacted, not the evidence as the arm made it; reported by the time `flush`
    returns."""
    archive = _archive(runs)
    register_secret("sleutel-8c1e")
    reported: list[str] = []
    try:
        with archive.evidence_writer() as writer:
            writer.append(_replied("a", 0, "de sleutel-8c1e is geheim"), reported.append)
            writer.flush()
            assert len(reported) == 1
    finally:
        forget_secrets()
    [line] = reported
    assert "sleutel-8c1e" not in line and REDACTED in line
    assert archive.evidence_file().read_text(encoding="utf-8") == line + "\n"


def test_the_last_line_of_an_attempt_counts(runs: RunsDir) -> None:
    """An attempt run once more appends a second line; every reader counts the later one,
    once, in the order of the file."""
    archive = _archive(runs)
    with archive.evidence_writer() as writer:
        for evidence in [
            _replied("a", 0, "eerst"),
            _replied("b", 0, "b"),
            _replied("a", 0, "opnieuw"),
            _replied("c", 0, "c"),
        ]:
            writer.append(evidence)
    assert archive.superseded() == {1}
    assert [(e.case_id, e.reply) for e in archive.iter_attempts()] == [
        ("b", "b"),
        ("a", "opnieuw"),
        ("c", "c"),
    ]
    assert len(list(archive.iter_evidence())) == 4  # every line, as written
    assert archive.count_attempts() == 3
    assert archive.completed() == {("a", 0), ("b", 0), ("c", 0)}


def test_a_broken_last_line_replaces_nothing(tmp_path: Path) -> None:
    """A crash that cut the retry's line short, or left it unreadable, leaves the earlier
    line of the attempt in place: it is not read, so it replaces nothing."""
    archive = _archive(tmp_path)
    with archive.evidence_writer() as writer:
        writer.append(_replied("a", 0, "eerst"))
        writer.append(_replied("b", 0, "b"))
    whole = archive.evidence_path.read_bytes()
    for tail in (
        _replied("a", 0, "opnieuw").model_dump_json()[:60].encode(),  # cut short
        _replied("a", 0, "opnieuw").model_dump_json()[:60].encode() + b"\n",  # not JSON
    ):
        archive.evidence_path.write_bytes(whole + tail)
        assert archive.superseded() == set()
        assert [e.reply for e in archive.iter_attempts()] == ["eerst", "b"]
        assert archive.count_attempts() == 2


def test_lines_in_another_layout_are_recognized_as_the_same_attempt(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    with archive.evidence_writer() as writer:
        writer.append(_replied("a", 0, "eerst"))
    retried = json.loads(_replied("a", 0, "opnieuw").model_dump_json())
    with archive.evidence_path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(retried, sort_keys=True, indent=None) + "\n")
    assert [e.reply for e in archive.iter_attempts()] == ["opnieuw"]


def test_existing_run_is_not_overwritten(runs: RunsDir) -> None:
    archive = _archive(runs)
    with pytest.raises(ProjectError, match=r"already exists"):
        archive.create(archive.manifest())


def test_scorings_are_kept(runs: RunsDir) -> None:
    archive = _archive(runs)
    assert archive.latest_report() is None
    first = archive.new_scoring()
    (first / "report.json").write_text('{"n": 1}', encoding="utf-8")
    archive.commit(first, ["report.json"])
    second = archive.new_scoring()
    assert [path.name for path in archive.scorings()] == ["0001", "0002"]
    assert archive.latest_report() == {"n": 1}
    (second / "report.json").write_text('{"n": 2}', encoding="utf-8")
    archive.commit(second, ["report.json"])
    assert archive.latest_report() == {"n": 2}
    again = RunArchive(runs, "r1")  # as another command reads it
    assert [path.name for path in again.scorings()] == ["0001", "0002"]
    assert again.latest_report() == {"n": 2}


def test_evidence_is_read_back_by_another_command(runs: RunsDir) -> None:
    archive = _archive(runs)
    with archive.evidence_writer() as writer:
        for case_id in ("a", "b", "c"):
            writer.append(_evidence(case_id, 0))
    with archive.evidence_writer() as writer:  # a resume
        writer.append(_replied("a", 0, "opnieuw"))
    assert [(e.case_id, e.reply) for e in RunArchive(runs, "r1").iter_attempts()] == [
        ("b", None),
        ("c", None),
        ("a", "opnieuw"),
    ]
    assert RunArchive(runs, "r1").count_attempts() == 3


def test_one_command_holds_a_run_at_a_time(runs: RunsDir) -> None:
    """Re-entrant in one process; refused with one line naming the holder in another."""
    archive = _archive(runs)
    with archive.locked("run"), archive.locked("rescore"):
        other = subprocess.run(
            [sys.executable, "-c", HOLD, str(runs)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            cwd=REPO,
            timeout=60,
        )
    assert other.returncode == 0, other.stderr
    assert f"is in use by soev-evals run (pid {os.getpid()} on " in other.stdout
    again = subprocess.run(
        [sys.executable, "-c", HOLD, str(runs)], capture_output=True, text=True, cwd=REPO
    )
    assert again.stdout == "held\n", again.stderr


def test_a_refused_command_names_the_holder_that_is_still_writing_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder writes who it is just after it takes the lock: a reader in between waits."""
    from soev_pipeline.run.store import local

    path = tmp_path / "lock"
    path.write_text("")
    record = {"pid": os.getpid(), "host": local.socket.gethostname(), "purpose": "run"}
    with path.open("a+", encoding="utf-8") as file:
        writer = threading.Timer(0.2, lambda: path.write_text(json.dumps(record)))
        writer.start()
        try:
            assert local._holder(file).startswith(f"soev-evals run (pid {os.getpid()} on ")
        finally:
            writer.join()
        # a killed holder's record (a pid that is gone) names no one, not the dead process
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        path.write_text(json.dumps({**record, "pid": int(dead.stdout)}))
        monkeypatch.setattr(local, "_HOLDER_WAIT", 0.05)
        assert local._holder(file) == "another command"


def test_a_released_lock_keeps_no_record_of_its_holder(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    with archive.locked("run"):
        assert '"purpose": "run"' in (tmp_path / "r1" / "lock").read_text()
    assert (tmp_path / "r1" / "lock").read_text() == ""


HOLD = """
import sys
from pathlib import Path
from soev_pipeline.run import RunArchive
from soev_pipeline.run.archive import RunLockedError
runs = sys.argv[1]
try:
    with RunArchive(runs if runs.startswith("s3://") else Path(runs), "r1").locked("rescore"):
        print("held")
except RunLockedError as exc:
    print(exc)
"""


def slow_script(text: str, history: list[str]) -> Reply:
    time.sleep(0.15)
    return Reply(f"Antwoord op {text}", refs=["BWBR0005537/artikel-6:7"])


@pytest.mark.e2e
def test_resume_after_an_interrupted_run(tmp_path: Path) -> None:
    """Ctrl-C archives what finished; --resume runs only the missing attempts, once each."""
    with FakeThreadAPI(slow_script) as system:
        path = write_project(tmp_path / "p", system.url)
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dh")}
        command = [sys.executable, "-m", "soev_pipeline", "run", "--project", str(path)]
        process = subprocess.Popen(
            [*command, "--run-id", "cut", "--k", "3"],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        evidence = path.parent / "runs" / "cut" / "evidence.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if evidence.exists() and len(evidence.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 130, err
        assert "resume with: soev-evals run --resume cut" in err
        archive = RunArchive(path.parent / "runs", "cut")
        before = archive.completed()
        assert 3 <= len(before) < 18
        texts_before = len(system.texts)

        resumed = subprocess.run(
            [*command, "--resume", "cut"], env=env, cwd=REPO, capture_output=True, text=True
        )
        assert resumed.returncode == 0, resumed.stderr
        pairs = [(e.case_id, e.attempt) for e in archive.iter_evidence()]
        assert len(pairs) == len(set(pairs)) == 18
        assert set(pairs) >= before
        # the resumed run asked the system for the missing attempts only (kern-002 has 2 turns)
        missing = set(pairs) - before
        asked = len(system.texts) - texts_before
        assert asked == len(missing) + sum(1 for case, _ in missing if case == "kern-002")


def test_a_full_disk_names_the_file_that_could_not_be_written(tmp_path: Path) -> None:
    import errno

    from soev_pipeline.run.archive import EvidenceWriter

    class FullDisk:
        closed = False

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "evidence.jsonl"
    writer = EvidenceWriter(path)
    writer._file.close()
    writer._file = FullDisk()  # type: ignore[assignment]
    with pytest.raises(OSError) as raised:
        writer.append(_evidence("kern-001", 0))
    assert raised.value.filename == str(path)
    assert raised.value.errno == errno.ENOSPC


class TestTampering:
    """An archive changed by hand: refused with one line, or skipped with a warning."""

    def test_an_attempt_outside_the_runs_k_is_skipped_with_a_warning(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        archive = _archive(tmp_path)  # k = 1
        with archive.evidence_writer() as writer:
            for attempt in (0, 1, 7):
                writer.append(_evidence("a", attempt))
        with caplog.at_level("WARNING"):
            assert [(e.case_id, e.attempt) for e in archive.iter_evidence()] == [("a", 0)]
        assert archive.completed() == {("a", 0)}
        warnings = [record.getMessage() for record in caplog.records]
        assert any("line 2: attempt 1 is outside 0..0" in line for line in warnings)
        assert any("line 3: attempt 7 is outside 0..0" in line for line in warnings)
        with pytest.raises(ValueError):  # a negative attempt never parses as evidence
            Evidence.model_validate_json('{"case_id": "a", "attempt": -1}')

    def test_a_manifest_of_another_run_is_refused(self, tmp_path: Path) -> None:
        _archive(tmp_path)
        (tmp_path / "r1").rename(tmp_path / "r2")
        with pytest.raises(ProjectError, match=r"manifest is of run 'r1', not of 'r2'"):
            RunArchive(tmp_path, "r2").manifest()

    @pytest.mark.parametrize("name", ["manifest.json", "evidence.jsonl", "report.json"])
    def test_a_fifo_is_refused_at_once(self, tmp_path: Path, name: str) -> None:
        archive = _archive(tmp_path)
        scoring = archive.new_scoring()
        (scoring / "report.json").write_text("{}", encoding="utf-8")
        (scoring / "verdicts.jsonl").write_text("", encoding="utf-8")
        target = scoring / name if name == "report.json" else archive.path / name
        target.unlink()
        os.mkfifo(target)
        with pytest.raises(ProjectError, match=r"not a regular file"):
            if name == "report.json":
                archive.latest_report()
            else:
                list(archive.iter_evidence())
        if name == "evidence.jsonl":
            with pytest.raises(ProjectError, match=r"not a regular file"):
                archive.evidence_writer()

    def test_a_huge_report_is_refused_without_reading_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from soev_pipeline.run import archive as module

        archive = _archive(tmp_path)
        report = archive.new_scoring() / "report.json"
        with report.open("wb") as file:  # sparse: large, without the disk
            file.truncate(module.MAX_JSON_BYTES + 1)
        with pytest.raises(ProjectError, match=r"more than the \d+ such a file may have"):
            archive.latest_report_path()
        monkeypatch.setattr(module, "MAX_JSON_BYTES", 10)
        with pytest.raises(ProjectError, match=r"manifest.json: \d+ bytes, more than the 10"):
            archive.manifest()

    def test_a_verdicts_fifo_is_refused_before_any_reader_opens_it(self, tmp_path: Path) -> None:
        archive = _archive(tmp_path)
        scoring = archive.new_scoring()
        (scoring / "report.json").write_text("{}", encoding="utf-8")
        os.mkfifo(scoring / "verdicts.jsonl")
        with pytest.raises(ProjectError, match=r"verdicts.jsonl: not a regular file"):
            archive.latest_report_path()
