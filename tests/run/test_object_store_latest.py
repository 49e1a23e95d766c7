"""The pointer to a run's latest scoring (`store.latest`, `<run>/latest.json`): moved forward
after a scoring's report and index, never backwards, by compare-and-swap; a fresh reader
takes a run page's files from it in one request; a pointer that is stale or wrong is
set right by the next listing (a listing's reuse later), and a run without one is read by
its listing. Against moto's S3 server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run import RunArchive, build_manifest
from soev_pipeline.run.store import ObjectStore
from soev_pipeline.run.store.bucket import Bucket
from soev_pipeline.run.store.latest import LATEST, Latest, advance, pack, unpack
from soev_pipeline.run.store.listing import LISTING_TTL_S
from tests.support.moto import S3


def _archive(url: str) -> RunArchive:
    archive = RunArchive(url, "r1")
    manifest = build_manifest(
        run_id="r1", project="p", suites=["s"], split=None, k=1, cases=[], shas={}
    )
    archive.create(manifest)
    return archive


def _score(archive: RunArchive, *, index: bool = True) -> Path:
    """A scoring committed as the aggregate step commits one: its report, then its index
    and HTML report."""
    scoring = archive.new_scoring()
    (scoring / "report.json").write_text(f'{{"scoring": "{scoring.name}"}}', encoding="utf-8")
    archive.commit(scoring, ["report.json"])
    if index:
        (scoring / "index.json").write_text(f'["index", "{scoring.name}"]', encoding="utf-8")
        (scoring / "report.html").write_text("<p>", encoding="utf-8")
        archive.commit(scoring, ["index.json", "report.html"])
    return scoring


def _pointer(url: str) -> Latest | None:
    found = Bucket(url).get(f"r1/{LATEST}")
    return None if found is None else unpack(found[0])


class Reader:
    """A fresh viewer's process: its own store, its calls to the bucket recorded, and a
    clock of its own for the reuse of listings."""

    def __init__(self, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.archive = RunArchive(url, "r1")
        self.store = self.archive.store = ObjectStore(url)
        self.archive.path = self.store.run_dir("r1")
        self.calls: list[str] = []
        self.seconds = 0.0
        self.store.listings.clock = lambda: self.seconds
        get, listed = self.store.bucket.get, self.store.bucket.list

        def recorded_get(name: str) -> tuple[bytes, str] | None:
            self.calls.append(f"get {name}")
            return get(name)

        def recorded_list(prefix: str, *, delimiter: bool = False) -> list[str]:
            self.calls.append(f"list {prefix}")
            return listed(prefix, delimiter=delimiter)

        monkeypatch.setattr(self.store.bucket, "get", recorded_get)
        monkeypatch.setattr(self.store.bucket, "list", recorded_list)

    def page(self) -> str | None:
        """What a run page reads: the scoring of the latest report, or None."""
        self.archive.read_ahead()
        assert self.archive.exists()
        path = self.archive.latest_report_path(verdicts=False)
        if path is None:
            return None
        assert (path.parent / "index.json").read_text() == f'["index", "{path.parent.name}"]'
        return str(json.loads(path.read_text())["scoring"])


def test_a_scoring_moves_the_pointer_once_its_report_and_index_are_archived(s3: S3) -> None:
    url = s3.url()
    archive = _archive(url)
    started = _pointer(url)
    assert started is not None and started.scoring is None  # made with the run
    assert started.manifest == (archive.path / "manifest.json").read_bytes()
    _score(archive, index=False)
    assert _pointer(url) == started  # a report without its index does not move it
    second = _score(archive)
    pointer = _pointer(url)
    assert pointer is not None and pointer.scoring == second.name == "0002"
    assert pointer.manifest == (archive.path / "manifest.json").read_bytes()
    assert pointer.report == (second / "report.json").read_bytes()
    assert pointer.index == (second / "index.json").read_bytes()
    head = Bucket(url).head(f"r1/{LATEST}")
    assert head is not None and head[1] == {"scoring": "0002"}


def test_a_fresh_reader_takes_the_run_page_in_one_round_trip(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request: the pointer, with the manifest; the run is not listed before the page
    (the listing that checks the pointer comes with a later page)."""
    url = s3.url()
    archive = _archive(url)
    _score(archive)
    reader = Reader(url, monkeypatch)
    assert reader.page() == "0001"
    assert reader.page() == "0001"  # the same page again, within a listing's reuse
    assert reader.calls == ["get r1/latest.json"]
    assert reader.archive.manifest() == archive.manifest()


def test_a_run_not_scored_yet_is_read_in_one_request_too(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run in progress: its pointer, made with it, names no scoring; its first scoring
    is shown once a listing is no longer reused."""
    url = s3.url()
    archive = _archive(url)
    reader = Reader(url, monkeypatch)
    assert reader.page() is None
    assert reader.calls == ["get r1/latest.json"]
    _score(archive)
    assert reader.page() is None  # the pointer stands for a listing a moment old
    reader.seconds = LISTING_TTL_S
    assert reader.page() == "0001"


def test_a_stale_pointer_gives_the_latest_scoring_at_the_next_load(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring 2 is complete but its command stopped before it moved the pointer: the
    first page is that of scoring 1, as a listing taken a moment earlier would show it;
    once a listing is no longer reused, the page is that of scoring 2."""
    url = s3.url()
    archive = _archive(url)
    _score(archive)
    with monkeypatch.context() as stopped:
        stopped.setattr("soev_pipeline.run.store.objects.advance", lambda *args: False)
        _score(archive)
    reader = Reader(url, monkeypatch)
    assert reader.page() == "0001"
    reader.seconds = LISTING_TTL_S
    assert reader.page() == "0002"
    assert "list r1/" in reader.calls


def test_a_pointer_naming_a_scoring_without_a_report_is_dropped(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url()
    archive = _archive(url)
    _score(archive)
    bucket = Bucket(url)
    found = bucket.head(f"r1/{LATEST}")
    assert found is not None
    made_up = Latest(
        "0007", archive.manifest_path.read_bytes(), b'{"scoring": "0007"}', b'["index", "0007"]'
    )
    assert bucket.swap(f"r1/{LATEST}", pack(made_up), found[0]) is not None
    reader = Reader(url, monkeypatch)
    assert reader.page() == "0007"  # taken for the first page, unchecked
    reader.seconds = LISTING_TTL_S
    assert reader.page() == "0001"  # the listing shows no such report: its copies dropped
    assert not (reader.archive.path / "scorings" / "0007" / "report.json").exists()


def test_a_pointer_left_by_a_run_removed_by_hand_finds_no_run_after_its_listing(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url()
    _score(_archive(url))
    bucket = Bucket(url)
    bucket.delete([key for key in s3.keys(url) if key != f"r1/{LATEST}"])
    reader = Reader(url, monkeypatch)
    assert reader.page() == "0001"
    reader.seconds = LISTING_TTL_S
    assert reader.archive.latest_report_path(verdicts=False) is None
    assert not reader.archive.exists()


@pytest.mark.parametrize("pointer", [None, b"not a pointer", b'{"soev_latest": 99}'])
def test_a_run_without_a_readable_pointer_is_read_by_its_listing(
    s3: S3, monkeypatch: pytest.MonkeyPatch, pointer: bytes | None
) -> None:
    """A run archived before the pointer existed, or with a pointer of another format."""
    url = s3.url()
    archive = _archive(url)
    _score(archive)
    _score(archive)
    bucket = Bucket(url)
    bucket.delete([f"r1/{LATEST}"])
    if pointer is not None:
        bucket.create(f"r1/{LATEST}", pointer)
    reader = Reader(url, monkeypatch)
    assert reader.page() == "0002"
    assert "list r1/" in reader.calls


@pytest.mark.parametrize(("between", "after"), [("0001", "0002"), ("0003", "0003")])
def test_a_writer_that_loses_the_swap_tries_again_and_never_moves_it_back(
    s3: S3, monkeypatch: pytest.MonkeyPatch, between: str, after: str
) -> None:
    """Writer A moves the pointer to 0002; between its reading the pointer and its swap,
    writer B moves it (to an earlier or a later scoring). A's swap fails on the ETag; it
    reads again and swaps only when the pointer still names an earlier scoring."""
    url = s3.url()
    bucket, other = Bucket(url), Bucket(url)
    advance(bucket, "r1", Latest("0001", b"{}", b"{}", b"[]"))
    swap = bucket.swap
    swapped: list[str | None] = []

    def racing_swap(name: str, data: bytes, etag: str, **kwargs: object) -> str | None:
        if not swapped:  # B, between A's reading and A's swap
            found = other.head(name)
            assert found is not None
            theirs = pack(Latest(between, b"{}", b'{"by": "B"}', b"[]"))
            assert other.swap(name, theirs, found[0], metadata={"scoring": between})
        swapped.append(swap(name, data, etag, **kwargs))  # type: ignore[arg-type]
        return swapped[-1]

    monkeypatch.setattr(bucket, "swap", racing_swap)
    assert advance(bucket, "r1", Latest("0002", b"{}", b"{}", b"[]"))
    assert swapped[0] is None  # A lost the first swap
    assert len(swapped) == (2 if after == "0002" else 1)
    pointer = _pointer(url)
    assert pointer is not None and pointer.scoring == after


def test_two_first_writers_create_the_pointer_once(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both find no pointer; B creates it first; A's create fails and A reads B's."""
    url = s3.url()
    bucket, other = Bucket(url), Bucket(url)
    create = bucket.create

    def racing_create(name: str, data: bytes, **kwargs: object) -> str | None:
        advance(other, "r1", Latest("0003", b"{}", b"{}", b"[]"))
        return create(name, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bucket, "create", racing_create)
    assert advance(bucket, "r1", Latest("0002", b"{}", b"{}", b"[]"))
    pointer = _pointer(url)
    assert pointer is not None and pointer.scoring == "0003"


def test_a_pointer_that_cannot_be_written_is_a_warning(
    s3: S3, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The scoring is complete without it: readers list the run."""
    url = s3.url()
    archive = _archive(url)
    store = archive.store
    assert isinstance(store, ObjectStore)

    def refused(name: str) -> None:
        raise ProjectError(f"{store.bucket.where(name)}: the object store refused: AccessDenied")

    monkeypatch.setattr(store.bucket, "head", refused)
    with caplog.at_level(logging.WARNING):
        _score(archive)
    assert "AccessDenied; the run's latest scoring is found by listing it" in caplog.text
    pointer = _pointer(url)
    assert pointer is not None and pointer.scoring is None


def test_writers_racing_at_once_leave_the_latest_scoring(s3: S3) -> None:
    """Six processes move the pointer at the same moment, each to its own scoring: every
    one returns having seen its scoring or a later one, and the last scoring is named."""
    url = s3.url()
    numbers = [3, 6, 1, 5, 2, 4]
    start = threading.Barrier(len(numbers))
    moved: list[bool] = []

    def move(number: int) -> None:
        bucket = Bucket(url)  # a process of its own
        bucket.client  # noqa: B018 - made before the race
        start.wait()
        moved.append(advance(bucket, "r1", Latest(f"{number:04d}", b"{}", b"{}", b"[]")))

    threads = [threading.Thread(target=move, args=(number,)) for number in numbers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert moved == [True] * len(numbers)
    pointer = _pointer(url)
    assert pointer is not None and pointer.scoring == "0006"
