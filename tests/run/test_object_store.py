"""What the object store adds to the archive's contract (tests/run/test_archive.py runs that
over both stores): the probe of conditional writes, the lease, scoring numbers claimed once,
and what readers download (the batches of attempts: test_object_store_batches.py). Against
moto's S3 server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from soev_pipeline.core import Evidence
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.secrets import redact
from soev_pipeline.run import RunArchive, build_manifest
from soev_pipeline.run.store import ObjectStore, RunLockedError
from soev_pipeline.run.store import bucket as bucket_module
from soev_pipeline.run.store.bucket import Bucket
from soev_pipeline.run.store.lease import Lease, lease_seconds
from tests.support.moto import ENV, S3


def _evidence(case_id: str, attempt: int, reply: str | None = None) -> Evidence:
    now = datetime.now(UTC)
    return Evidence(
        case_id=case_id,
        suite="s",
        split="dev",
        attempt=attempt,
        reply=reply,
        started_at=now,
        finished_at=now,
    )


def _archive(url: str, k: int = 1) -> RunArchive:
    archive = RunArchive(url, "r1")
    manifest = build_manifest(
        run_id="r1", project="p", suites=["s"], split=None, k=k, cases=[], shas={}
    )
    archive.create(manifest)
    return archive


def test_a_store_that_ignores_conditional_writes_is_refused(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As an old MinIO or moto: the headers are dropped on the wire, the put overwrites."""
    bucket = Bucket(s3.url())
    client = bucket.client
    put = client.put_object

    def unconditional(**kwargs: Any) -> Any:
        kwargs.pop("IfNoneMatch", None)
        kwargs.pop("IfMatch", None)
        return put(**kwargs)

    monkeypatch.setattr(client, "put_object", unconditional)
    with pytest.raises(ProjectError, match=r"does not honour If-None-Match") as refused:
        bucket.probe()
    assert "\n" not in str(refused.value)
    assert not [key for key in s3.keys(bucket.url) if not key.startswith(".soev-probe")]


def test_the_probe_passes_a_store_with_conditional_writes(s3: S3) -> None:
    bucket = Bucket(s3.url())
    bucket.probe()
    assert bucket.probed and s3.keys(bucket.url) == []


def test_a_missing_bucket_is_one_line(s3: S3) -> None:
    with pytest.raises(ProjectError, match=r"no bucket 'nowhere' at the object store"):
        Bucket("s3://nowhere/runs").probe()


def test_the_aws_secrets_are_redacted(s3: S3) -> None:
    Bucket(s3.url())
    assert ENV["AWS_SECRET_ACCESS_KEY"] not in redact(f"key={ENV['AWS_SECRET_ACCESS_KEY']}")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.seconds = 0.0

    def wall(self) -> datetime:
        return self.now + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds


def _lease(bucket: Bucket, clock: Clock, purpose: str = "run") -> Lease:
    lease = Lease(bucket, "r1/lease.json", "r1", purpose, 60, clock.wall, clock.monotonic)
    lease._renew = lambda: None  # type: ignore[method-assign]  # renewed by hand here
    return lease


def test_a_lease_is_refused_until_it_expires_then_taken_over(s3: S3) -> None:
    bucket, clock = Bucket(s3.url()), Clock()
    first = _lease(bucket, clock)
    first.acquire()
    second = _lease(bucket, clock, "resume")
    with pytest.raises(RunLockedError) as refused:
        second.acquire()
    message = str(refused.value)
    assert "in use by soev-evals run (pid " in message and " on " in message
    assert "its lease expires at 2026-01-01T00:01:00+00:00" in message
    clock.seconds = 30
    assert first.renew() and first.valid()  # renewed: expires at 00:01:30
    clock.seconds = 80
    with pytest.raises(RunLockedError):
        second.acquire()
    clock.seconds = 91  # the holder paused past its lease
    second.acquire()
    assert not first.valid() and first.lost  # it learns at once, and starts nothing more
    second.release()
    third = _lease(bucket, clock, "rescore")
    third.acquire()  # a released lease is free at once


def test_a_holder_that_was_not_taken_over_keeps_its_run(s3: S3) -> None:
    bucket, clock = Bucket(s3.url()), Clock()
    lease = _lease(bucket, clock)
    lease.acquire()
    clock.seconds = 500  # paused, but nobody took the run
    assert lease.valid() and not lease.lost


def test_the_lease_length_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lease_seconds() == 60
    monkeypatch.setenv("SOEV_LEASE_SECONDS", "5")
    assert lease_seconds() == 5
    for bad in ("0", "soon", "7200"):
        monkeypatch.setenv("SOEV_LEASE_SECONDS", bad)
        with pytest.raises(ProjectError, match=r"SOEV_LEASE_SECONDS"):
            lease_seconds()


def test_scorings_are_numbered_without_collisions(s3: S3) -> None:
    """Two processes claim at once: each number is created once."""
    url = s3.url()
    _archive(url)
    stores = [ObjectStore(url) for _ in range(4)]
    claimed: list[str] = []
    start = threading.Barrier(len(stores))

    def claim(store: ObjectStore) -> None:
        start.wait()
        for _ in range(3):
            claimed.append(store.new_scoring("r1").name)

    threads = [threading.Thread(target=claim, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == [f"{number:04d}" for number in range(1, 13)]


def test_a_scoring_file_is_never_overwritten(s3: S3) -> None:
    archive = _archive(s3.url())
    scoring = archive.new_scoring()
    (scoring / "report.json").write_text("{}", encoding="utf-8")
    archive.commit(scoring, ["report.json"])
    with pytest.raises(ProjectError, match=r"exists already; a scoring is never overwritten"):
        archive.commit(scoring, ["report.json"])


def test_the_lease_object_names_its_holder(s3: S3) -> None:
    url = s3.url()
    archive = _archive(url)
    with archive.locked("rescore"):
        store = archive.store
        assert isinstance(store, ObjectStore)
        found = store.bucket.get("r1/lease.json")
        assert found is not None
        holder = json.loads(found[0])
        assert holder["purpose"] == "rescore" and not holder["released"]
        assert ENV["AWS_SECRET_ACCESS_KEY"] not in found[0].decode()


def test_a_reader_takes_the_verdicts_when_it_asks_and_never_the_html(s3: S3) -> None:
    """A viewer's run page needs the report and the saved index of the latest scoring, not
    its verdicts (`fetch` brings them for a case page), its summary nor its HTML report."""
    url = s3.url()
    archive = _archive(url)
    scoring = archive.new_scoring()
    names = ["verdicts.jsonl", "scoring.json", "report.json", "index.json", "report.html"]
    for name in names:
        (scoring / name).write_text(f"{name}\n", encoding="utf-8")
    archive.commit(scoring, names)
    fresh = ObjectStore(url)  # another process
    fresh.refresh_scorings("r1", verdicts=False)
    folder = fresh.run_dir("r1") / "scorings" / scoring.name
    assert sorted(path.name for path in folder.iterdir()) == ["index.json", "report.json"]
    fresh.fetch("r1", f"scorings/{scoring.name}/verdicts.jsonl")
    assert (folder / "verdicts.jsonl").read_text() == "verdicts.jsonl\n"
    fresh.refresh_scorings("r1")
    assert (folder / "scoring.json").exists()
    assert not (folder / "report.html").exists()


def test_the_compacting_process_reads_its_compaction_without_downloading_it(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's grading reads the evidence right after the compaction its own attempt
    step made: it keeps the bytes it sent, and reads what another process reads."""
    url = s3.url()
    archive = _archive(url)
    assert isinstance(archive.store, ObjectStore)
    fetched: list[str] = []
    get = archive.store.bucket.get

    def recorded(name: str) -> tuple[bytes, str] | None:
        fetched.append(name)
        return get(name)

    monkeypatch.setattr(archive.store.bucket, "get", recorded)
    with archive.evidence_writer() as writer:
        for case_id in "abc":
            writer.append(_evidence(case_id, 0))
    ours = [(e.case_id, e.attempt) for e in archive.iter_attempts()]
    assert not [name for name in fetched if "/compacted/" in name]
    fresh = RunArchive(url, "r1")
    fresh.store = ObjectStore(url)  # another process
    fresh.path = fresh.store.run_dir("r1")
    assert (
        [(e.case_id, e.attempt) for e in fresh.iter_attempts()]
        == ours
        == [
            ("a", 0),
            ("b", 0),
            ("c", 0),
        ]
    )


def test_a_reader_lists_the_run_while_it_downloads_the_manifest(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh viewer's first page waits for one request less: the listing that it asks for
    next is on its way while the manifest downloads, and is not asked for twice."""
    url = s3.url()
    _archive(url)
    fresh = ObjectStore(url)  # another process
    get, listed = fresh.bucket.get, fresh.bucket.list
    listing = threading.Event()
    calls: list[str] = []

    def recorded_list(prefix: str, *, delimiter: bool = False) -> list[str]:
        calls.append(prefix)
        listing.set()
        return listed(prefix, delimiter=delimiter)

    def waiting_get(name: str) -> tuple[bytes, str] | None:
        if name.endswith("manifest.json"):
            calls.append("manifest" if listing.wait(30) else "manifest, alone")
        return get(name)

    monkeypatch.setattr(fresh.bucket, "list", recorded_list)
    monkeypatch.setattr(fresh.bucket, "get", waiting_get)
    assert fresh.has_manifest("r1")
    fresh.refresh_scorings("r1", verdicts=False)
    assert sorted(calls) == ["manifest", "r1/"]


def test_a_listing_reads_every_page(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = Bucket(s3.url())
    monkeypatch.setattr(bucket_module, "LIST_PAGE", 2)
    names = [f"r{number}/manifest.json" for number in range(5)]
    for name in names:
        bucket.create(name, b"{}")
    assert bucket.list("") == names
    assert bucket.list("", delimiter=True) == [f"r{number}/" for number in range(5)]
