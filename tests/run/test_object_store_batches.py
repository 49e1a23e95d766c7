"""The attempts of a run in object storage: batches uploaded off the attempt loop, reported
only once they landed, compacted, one copy of each attempt kept, and the per-attempt layout
of older runs still read. Against moto's S3 server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from soev_pipeline.core import Case, Evidence
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run import RunArchive, build_manifest
from soev_pipeline.run.attempts import AttemptStats, plan_attempts, run_attempts
from soev_pipeline.run.store import ObjectStore, RunLockedError, batches
from soev_pipeline.run.store.batches import BatchWriter
from soev_pipeline.run.store.layout import (
    attempt_name,
    batch_bytes,
    batch_key,
    first_copies,
    read_batch,
)
from tests.run.test_attempts import Arm, cases
from tests.run.test_object_store import Clock, _evidence, _lease
from tests.support.moto import S3


def _line(case_id: str, attempt: int, reply: str | None = None) -> bytes:
    return (_evidence(case_id, attempt, reply).model_dump_json() + "\n").encode()


def _archive(url: str) -> tuple[RunArchive, ObjectStore]:
    archive = RunArchive(url, "r1")
    manifest = build_manifest(
        run_id="r1", project="p", suites=["s"], split=None, k=1, cases=[], shas={}
    )
    archive.create(manifest)
    assert isinstance(archive.store, ObjectStore)
    return archive, archive.store


def _fresh(url: str) -> RunArchive:
    """The run as another process reads it (a store of its own, no cache)."""
    archive = RunArchive(url, "r1")
    archive.store = ObjectStore(url)
    archive.path = archive.store.run_dir("r1")
    return archive


def _replies(archive: RunArchive) -> list[tuple[str, str | None]]:
    return [(e.case_id, e.reply) for e in archive.iter_evidence()]


class Held:
    """The bucket's `create`, held at a gate: `entered` is set once a batch waits there."""

    def __init__(self, store: ObjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.create = store.bucket.create
        self.gate, self.entered = threading.Event(), threading.Event()
        monkeypatch.setattr(store.bucket, "create", self)

    def __call__(self, name: str, data: bytes) -> str | None:
        if "/batches/" in name:
            self.entered.set()
            assert self.gate.wait(30)
        return self.create(name, data)


def test_an_attempt_is_reported_only_once_its_batch_landed(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appending does not wait for the upload, and nothing is reported (counted, graded)
    while the batch that holds it is on its way."""
    url = s3.url()
    archive, store = _archive(url)
    held = Held(store, monkeypatch)
    reported: list[str] = []
    writer = archive.evidence_writer()
    writer.append(_evidence("a", 0), reported.append)
    writer.append(_evidence("b", 0), reported.append)
    assert writer.written == 2  # appended while the upload waits
    assert held.entered.wait(30)
    writer.check()  # delivers what landed: nothing yet
    assert reported == []
    held.gate.set()
    writer.flush()
    assert [json.loads(line)["case_id"] for line in reported] == ["a", "b"]
    assert [key for key in s3.keys(url) if "/batches/" in key] == [f"r1/{batch_key(1)}"]
    writer.close()
    assert archive.completed() == {("a", 0), ("b", 0)}


def test_the_attempts_are_batched_then_compacted_into_one_object(s3: S3) -> None:
    url = s3.url()
    archive, _ = _archive(url)
    with archive.evidence_writer() as writer:
        for case_id in "abcdef":
            writer.append(_evidence(case_id, 0))
    keys = s3.keys(url)
    assert [key for key in keys if "/batches/" in key] == []
    assert [key for key in keys if "/compacted/" in key] == ["r1/compacted/000001.jsonl"]
    with archive.evidence_writer() as writer:
        writer.append(_evidence("a", 0, "opnieuw"))
    assert [key for key in s3.keys(url) if "/compacted/" in key or "/batches/" in key] == [
        "r1/compacted/000001.jsonl",
        "r1/compacted/000002.jsonl",
    ]
    assert [(e.case_id, e.reply) for e in _fresh(url).iter_attempts()] == [
        *((case_id, None) for case_id in "bcdef"),
        ("a", "opnieuw"),
    ]


def test_a_late_batch_never_makes_a_second_copy(s3: S3) -> None:
    """A holder paused past its lease uploads a batch of attempts that its successor
    archived meanwhile, compacted or not: readers and compaction keep the first copy."""
    url = s3.url()
    archive, store = _archive(url)
    with archive.evidence_writer() as writer:
        writer.append(_evidence("a", 0, "first"))
    late = batch_bytes([("a", 0, 0), ("b", 0, 0)], [_line("a", 0, "late"), _line("b", 0, "late")])
    assert store.bucket.create(f"r1/{batch_key(1)}", late) is not None  # a deleted key
    assert _replies(_fresh(url)) == [("a", "first")]
    assert store.bucket.create(f"r1/{batch_key(9)}", late) is not None
    assert _replies(_fresh(url)) == [("a", "first"), ("b", "late")]
    with archive.evidence_writer() as writer:
        writer.append(_evidence("c", 0, "next"))
    assert sorted(_replies(_fresh(url))) == [("a", "first"), ("b", "late"), ("c", "next")]


def test_of_two_loose_copies_the_batch_with_the_smaller_key_counts() -> None:
    one = read_batch("one", batch_bytes([("a", 0, 0)], [b"early\n"]))
    two = read_batch("two", batch_bytes([("a", 0, 0), ("b", 0, 0)], [b"late\n", b"b\n"]))
    kept: set[tuple[str, int, int]] = {("c", 0, 0)}
    assert list(first_copies(kept, [("1", one), ("2", two)])) == [b"early\n", b"b\n"]


def test_a_batch_whose_header_disagrees_with_its_lines_is_one_line() -> None:
    with pytest.raises(ProjectError, match=r"^s3://b/r1/batches/x: the header names 2") as bad:
        read_batch("s3://b/r1/batches/x", batch_bytes([("a", 0, 0), ("b", 0, 0)], [b"a\n"]))
    assert "\n" not in str(bad.value)
    with pytest.raises(ProjectError, match=r"line 1: not the header of a batch"):
        read_batch("s3://b/r1/batches/x", b"{}\n")


def test_a_batch_that_lands_after_its_holder_lost_the_lease_is_not_reported(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url()
    _, store = _archive(url)
    clock = Clock()
    lease = _lease(store.bucket, clock)
    lease.acquire()
    writer = BatchWriter(store, "r1", lease, {}, 1)
    held = Held(store, monkeypatch)
    reported: list[str] = []
    writer.append(_evidence("a", 0, "paused"), reported.append)
    assert held.entered.wait(30)  # checked its lease, then paused before the upload
    clock.seconds = 91
    _lease(store.bucket, clock, "resume").acquire()  # a successor takes the run
    held.gate.set()
    with pytest.raises(RunLockedError, match=r"this command lost run 'r1'"):
        writer.flush()
    assert reported == []
    with pytest.raises(RunLockedError):
        writer.append(_evidence("b", 0), reported.append)  # it starts nothing more
    with pytest.raises(RunLockedError):
        writer.close()
    assert f"r1/{batch_key(1)}" in s3.keys(url)  # landed, never reported, read once
    assert _replies(_fresh(url)) == [("a", "paused")]


def test_a_holder_that_lost_its_lease_uploads_no_more_batches(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url()
    _, store = _archive(url)
    monkeypatch.setattr(batches, "BATCH_WAIT_S", 3600.0)  # sent on flush only
    clock = Clock()
    lease = _lease(store.bucket, clock)
    lease.acquire()
    writer = BatchWriter(store, "r1", lease, {}, 1)
    writer.append(_evidence("a", 0))  # then the process paused
    clock.seconds = 91
    _lease(store.bucket, clock, "resume").acquire()
    with pytest.raises(RunLockedError):
        writer.flush()
    assert not [key for key in s3.keys(url) if "/batches/" in key]


def test_a_number_taken_by_a_late_batch_is_skipped(s3: S3) -> None:
    url = s3.url()
    archive, store = _archive(url)
    writer = archive.evidence_writer()
    late = batch_bytes([("z", 0, 0)], [_line("z", 0, "late")])
    assert store.bucket.create(f"r1/{batch_key(1)}", late) is not None
    reported: list[str] = []
    writer.append(_evidence("a", 0), reported.append)
    writer.flush()
    assert len(reported) == 1
    assert f"r1/{batch_key(2)}" in s3.keys(url)
    writer.close()
    assert sorted(_replies(_fresh(url))) == [("a", None), ("z", "late")]


def test_a_run_of_the_per_attempt_layout_is_read_and_resumed(s3: S3) -> None:
    """A run archived before batches: a compaction that names the attempt objects it
    covers, and attempt objects after it. Read as before; a resume adds batches and
    compacts all of it once."""
    url = s3.url()
    _, store = _archive(url)
    covers = [attempt_name("a", 0, 0), attempt_name("b", 0, 0)]
    header = json.dumps({"soev_compaction": 1, "covers": covers}).encode() + b"\n"
    compacted = header + _line("a", 0, "old") + _line("b", 0, "old")
    assert store.bucket.create("r1/compacted/000001.jsonl", compacted) is not None
    for name, line in [
        (attempt_name("c", 0, 0), _line("c", 0, "loose")),
        (attempt_name("a", 0, 0), _line("a", 0, "late copy")),  # covered: never read
        (attempt_name("a", 0, 1), _line("a", 0, "again")),
    ]:
        assert store.bucket.create(f"r1/{name}", line) is not None
    expected = [("a", "old"), ("b", "old"), ("a", "again"), ("c", "loose")]
    reader = _fresh(url)
    assert _replies(reader) == expected
    with reader.locked("resume"), reader.evidence_writer() as writer:
        writer.append(_evidence("b", 0, "retried"))  # n = 1: the last of b counts
    keys = s3.keys(url)
    assert [key for key in keys if "/attempts/" in key or "/batches/" in key] == []
    assert [key for key in keys if "/compacted/" in key][-1] == "r1/compacted/000002.jsonl"
    assert _replies(_fresh(url)) == [*expected, ("b", "retried")]
    assert [(e.case_id, e.reply) for e in _fresh(url).iter_attempts()] == [
        ("a", "again"),
        ("c", "loose"),
        ("b", "retried"),
    ]


def test_a_failed_upload_stops_the_attempts_with_its_error(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, store = _archive(s3.url())
    writer = archive.evidence_writer()

    def refused(name: str, data: bytes) -> Any:
        raise ProjectError(f"{name}: the object store refused: AccessDenied")

    monkeypatch.setattr(store.bucket, "create", refused)
    reported: list[str] = []
    writer.append(_evidence("a", 0), reported.append)
    with pytest.raises(ProjectError, match=r"AccessDenied"):
        writer.flush()
    with pytest.raises(ProjectError, match=r"AccessDenied"):
        writer.check()
    assert reported == []


def test_the_attempt_loop_reports_an_attempt_only_once_its_batch_landed(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the streamed grading and the progress line see: an attempt whose batch is on its
    way is not counted, graded or shown; when the loop returns, every one is."""
    url = s3.url()
    archive, store = _archive(url)
    held = Held(store, monkeypatch)
    reported: list[str] = []
    seen_while_held: list[int] = []

    def answer(case_id: str, attempt: int) -> Evidence:
        return _evidence(case_id, attempt, "antwoord")

    class Waiting(Arm):
        async def attempt(self, case: Case, *, attempt: int, fields: Any) -> Evidence:
            if case.id == "kern-002":  # the earlier two finished: their batch waits
                assert await asyncio.to_thread(held.entered.wait, 30)
                seen_while_held.append(len(reported))
                held.gate.set()
            return await super().attempt(case, attempt=attempt, fields=fields)

    async def go() -> AttemptStats:
        with archive.evidence_writer() as writer:
            return await run_attempts(
                plan_attempts(cases(3), 1),
                Waiting(answer),
                writer,
                messages={},
                concurrency=1,
                archived=reported.append,
            )

    stats = asyncio.run(go())
    assert seen_while_held == [0]
    assert stats.finished == 3 and len(reported) == 3
    assert [json.loads(line)["case_id"] for line in reported] == [
        e.case_id for e in _fresh(url).iter_evidence()
    ]
