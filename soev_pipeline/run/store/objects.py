"""The object store: a run archive in S3-compatible object storage, for a cluster without a
shared disk (docs/runs.md#the-object-store-archive).

    <prefix>/<run_id>/manifest.json                   created only if absent
    <prefix>/<run_id>/lease.json                      who holds the run (`lease.Lease`)
    <prefix>/<run_id>/batches/, compacted/            the attempts (`layout`)
    <prefix>/<run_id>/scorings/<NNNN>/claim.json      the scoring's number, claimed if absent
    <prefix>/<run_id>/scorings/<NNNN>/verdicts.jsonl, scoring.json, report.json, index.json,
                                      report.html     report.json first of the last three: the
                                                      scoring is complete
    <prefix>/<run_id>/latest.json                     copies of the manifest and the latest
                                                      scoring's report and index, a hint for
                                                      readers (`latest`)

The attempt step's attempts are uploaded in batches off the attempt loop
(`batches.BatchWriter`); when it ends, the run's batches are compacted into one object and
the batches it covers are deleted, so that reading a run takes a few requests. A reader
takes the latest compaction and the first copy of each attempt it does not hold.

While a command works on a run, the run's files are read and written in a cache folder of
this process, which is removed when it ends.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from soev_pipeline.core.errors import ProjectError

from .batches import BatchWriter
from .bucket import Bucket
from .files import naming
from .latest import LATEST, Latest, advance, start, unpack
from .layout import (
    COMPACTED,
    Compaction,
    Name,
    batch_number,
    compaction_bytes,
    compaction_key,
    compaction_number,
    first_copies,
    parse_attempt,
    read_batch,
    read_compaction_header,
    reading_order,
)
from .lease import Lease, lease_seconds
from .listing import LISTING_TTL_S, Listings, write
from .local import EVIDENCE, MANIFEST, SCORINGS

LEASE = "lease.json"
CLAIM = "claim.json"
VERDICTS = "verdicts.jsonl"
SCORING = "scoring.json"
REPORT = "report.json"
HTML = "report.html"
INDEX = "index.json"
FETCHES = 16


class ObjectStore:
    """The runs under one `s3://bucket/prefix` (see the module's docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bucket = Bucket(url)
        self.cache = Path(tempfile.mkdtemp(prefix="soev-runs-"))
        atexit.register(shutil.rmtree, self.cache, True)
        self.listings = Listings(self.bucket, self.cache)
        self._guard = threading.RLock()
        self._leases: dict[str, tuple[Lease, list[int]]] = {}
        self._synced: dict[str, tuple[str | None, tuple[str, ...]]] = {}
        self._compactions: dict[tuple[str, str], Compaction] = {}
        self._seen: dict[str, frozenset[Name]] = {}
        self._next_batch: dict[str, int] = {}
        self._writers: dict[str, BatchWriter] = {}
        self._pointed: dict[str, tuple[float, str | None]] = {}

    # Names and places

    def where(self, run_id: str, name: str = "") -> str:
        return self.bucket.where(f"{run_id}/{name}" if name else run_id)

    def run_dir(self, run_id: str) -> Path:
        return self.cache / run_id

    # The run

    @contextmanager
    def locked(self, run_id: str, purpose: str) -> Iterator[None]:
        """Hold the run's lease (`lease.Lease`), re-entrant within this process."""
        with self._guard:
            entry = self._leases.get(run_id)
            if entry is not None:
                entry[1][0] += 1
            else:
                seconds = lease_seconds()
                self.bucket.probe()
                lease = Lease(self.bucket, f"{run_id}/{LEASE}", run_id, purpose, seconds)
                lease.acquire()
                entry = self._leases[run_id] = (lease, [1])
        try:
            yield
        finally:
            with self._guard:
                entry[1][0] -= 1
                if entry[1][0] == 0:
                    del self._leases[run_id]
                    entry[0].release(remove=not self.has_manifest(run_id))

    def lease(self, run_id: str) -> Lease | None:
        with self._guard:
            entry = self._leases.get(run_id)
        return None if entry is None else entry[0]

    def has_manifest(self, run_id: str) -> bool:
        """Whether the run's manifest exists (downloaded once; the run's listing, which
        every reader asks for next, is asked for meanwhile)."""
        path = self.run_dir(run_id) / MANIFEST
        if path.exists():
            return True
        self.listings.ahead(run_id)
        return self.listings.download(run_id, MANIFEST, path)

    def read_ahead(self, run_id: str) -> None:
        """A viewer opens the run: when this process has not read it yet, the run's pointer
        to its latest scoring (`latest`) is downloaded now. It holds copies of the
        manifest, the report and the index that a run page reads: the page waits for this
        one request. When the run has none, its listing is asked for at once, and the
        manifest is downloaded as before (`has_manifest`), which names what failed."""
        if (self.run_dir(run_id) / MANIFEST).exists():
            return
        try:
            found = self.bucket.get(f"{run_id}/{LATEST}")
        except ProjectError:
            found = None
        if found is None or not self._take_pointer(run_id, found[0]):
            self.listings.ahead(run_id)

    def create_run(self, run_id: str, manifest: str) -> bool:
        self.bucket.probe()
        if self.bucket.create(f"{run_id}/{MANIFEST}", manifest.encode("utf-8")) is None:
            return False
        self.listings.changed(run_id)
        self.listings.changed("")  # the list of runs
        folder = self.run_dir(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).write_text(manifest, encoding="utf-8")
        (folder / EVIDENCE).touch()
        start(self.bucket, run_id, manifest.encode("utf-8"))
        return True

    def run_ids(self) -> list[str]:
        """The runs' folders under the prefix that hold a manifest."""
        return [
            name
            for name in self.listings.runs()
            if not name.startswith(".") and self.has_manifest(name)
        ]

    # Evidence

    def evidence_writer(self, run_id: str) -> BatchWriter:
        """A writer that numbers its attempts from what this process last read of the run
        (what its plan was made from), not from what is archived now: an attempt that
        another command archived meanwhile keeps its first copy (`layout`)."""
        with self._guard:
            known = self._seen.get(run_id)
        if known is None:
            self.refresh_evidence(run_id)
        with self._guard:
            generations: dict[tuple[str, int], int] = {}
            for case_id, attempt, generation in self._seen[run_id]:
                key = (case_id, attempt)
                generations[key] = max(generations.get(key, -1), generation)
            number = self._next_batch.get(run_id, 1)
        writer = BatchWriter(self, run_id, self.lease(run_id), generations, number)
        with self._guard:
            self._writers[run_id] = writer
        return writer

    def landed(self, run_id: str, key: str, names: list[Name], data: bytes) -> None:
        self.listings.keep(run_id, key, data)
        with self._guard:
            self._seen[run_id] = self._seen.get(run_id, frozenset()) | frozenset(names)
            self._next_batch[run_id] = max(
                self._next_batch.get(run_id, 1), (batch_number(key) or 0) + 1
            )
        self.listings.changed(run_id)

    def closed(self, run_id: str, writer: BatchWriter) -> None:
        with self._guard:
            if self._writers.get(run_id) is writer:
                del self._writers[run_id]
        self.listings.changed(run_id)

    def _compaction(self, run_id: str, key: str | None) -> Compaction:
        """The header of compaction `key` (downloaded once)."""
        if key is None:
            return Compaction(frozenset(), frozenset())
        with self._guard:
            known = self._compactions.get((run_id, key))
        if known is not None:
            return known
        path = self.listings.kept(run_id) / key
        if not path.exists() and not self.listings.download(run_id, key, path):
            raise ProjectError(f"{self.where(run_id, key)}: the compaction was deleted")
        with path.open("rb") as file:
            header = file.readline()
        found = read_compaction_header(self.where(run_id, key), header)
        with self._guard:
            self._compactions[(run_id, key)] = found
        return found

    def evidence_state(
        self, run_id: str, *, fresh: bool = False
    ) -> tuple[str | None, Compaction, list[str]]:
        """The run's latest compaction, its header, and the objects of attempts it does not
        cover, in reading order (`layout`)."""
        names = self.listings.run(run_id, fresh=fresh)
        compactions = sorted(name for name in names if name.startswith(COMPACTED))
        latest = compactions[-1] if compactions else None
        compaction = self._compaction(run_id, latest)
        numbers = [batch_number(key) or 0 for key in (*names, *compaction.covers)]
        with self._guard:
            self._next_batch[run_id] = max(
                self._next_batch.get(run_id, 1), max(numbers, default=0) + 1
            )
        return (
            latest,
            compaction,
            reading_order(name for name in names if name not in compaction.covers),
        )

    def _read_loose(
        self, run_id: str, keys: Sequence[str]
    ) -> list[tuple[str, list[tuple[Name, bytes]]]] | None:
        """The attempts of the objects `keys`, each with its name; None when one was
        deleted meanwhile (a compaction took it: read again). A batch this process sent
        or read before is not downloaded again."""

        def one(key: str) -> tuple[str, list[tuple[Name, bytes]]] | None:
            path = self.listings.kept(run_id) / key
            if path.exists():
                data = path.read_bytes()
            else:
                found = self.bucket.get(f"{run_id}/{key}")
                if found is None:
                    return None
                data = found[0]
            named = parse_attempt(key)
            if named is not None:
                return key, [(named, data)]
            if not path.exists():
                self.listings.keep(run_id, key, data)
            return key, read_batch(self.where(run_id, key), data)

        if not keys:
            return []
        with ThreadPoolExecutor(min(FETCHES, len(keys))) as pool:
            read = list(pool.map(one, keys))
        if any(item is None for item in read):
            return None
        return [item for item in read if item is not None]

    def _write_body(self, run_id: str, latest: str | None, out: IO[bytes]) -> None:
        """Write the lines of compaction `latest` (kept here), without its header, to `out`."""
        if latest is None:
            return
        with (self.listings.kept(run_id) / latest).open("rb") as compacted:
            compacted.readline()
            shutil.copyfileobj(compacted, out)

    def refresh_evidence(self, run_id: str) -> None:
        """Write the cache's `evidence.jsonl`: the latest compaction's lines, then the
        first copy of each attempt it does not hold (`layout`). The open writer of this
        process sends what it holds first, so that it reads what it appended."""
        with self._guard:
            writer = self._writers.get(run_id)
        if writer is not None:
            writer.drain()
        for attempt in range(3):
            latest, compaction, loose = self.evidence_state(run_id, fresh=attempt > 0)
            path = self.run_dir(run_id) / EVIDENCE
            with self._guard:
                if self._synced.get(run_id) == (latest, tuple(loose)) and path.exists():
                    return
            read = self._read_loose(run_id, loose)
            if read is None:
                continue
            kept = set(compaction.holds)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{EVIDENCE}.{threading.get_ident()}.tmp")
            with naming(path), temporary.open("wb") as out:
                self._write_body(run_id, latest, out)
                out.writelines(first_copies(kept, read))
            os.replace(temporary, path)
            with self._guard:
                self._synced[run_id] = (latest, tuple(loose))
                self._seen[run_id] = frozenset(kept)
            return
        raise ProjectError(f"{self.where(run_id)}: the attempts kept changing while read")

    def compact(self, run_id: str) -> None:
        """Compact the run's attempts into one object, then delete the objects it covers.

        A compaction is created only if its number is free; when another made one first,
        this reads again and takes the next number.
        """
        for _ in range(5):
            latest, compaction, loose = self.evidence_state(run_id, fresh=True)
            if not loose:
                break
            read = self._read_loose(run_id, loose)
            if read is None:
                continue
            kept = set(compaction.holds)
            body = io.BytesIO()
            self._write_body(run_id, latest, body)
            body.writelines(first_copies(kept, read))
            number = compaction_number(latest) + 1 if latest else 1
            key = compaction_key(number)
            data = compaction_bytes(compaction.covers | set(loose), kept, body.getvalue())
            if self.bucket.create(f"{run_id}/{key}", data) is not None:
                self.listings.keep(run_id, key, data)
                break
        self.listings.changed(run_id)
        _, compaction, _ = self.evidence_state(run_id, fresh=True)
        covered = [name for name in self.listings.run(run_id) if name in compaction.covers]
        if covered:
            self.bucket.delete([f"{run_id}/{name}" for name in covered])
            self.listings.changed(run_id)

    # Scorings

    def refresh_scorings(self, run_id: str, *, verdicts: bool = True) -> None:
        """Download the scorings' files this process has not, all at once: the small ones,
        and the saved index and the verdicts of the latest graded and the latest reported
        scoring. Never the HTML report: no reader opens it from here (it is written, then
        published, by the command that makes it).

        Without `verdicts`, only what a viewer's run page reads: the report and the saved
        index of the latest reported scoring; after `read_ahead`, those of the run's pointer
        (`latest`), which stand for a listing of the run for as long as one is reused
        (`listing.LISTING_TTL_S`); the next listing checks them (`_check_pointer`)."""
        if not verdicts and self._pointer_stands(run_id):
            return
        listed = self.listings.run(run_id)
        self._check_pointer(run_id, listed)
        files: dict[str, set[str]] = {}
        for name in listed:
            parts = name.split("/")
            if len(parts) == 3 and parts[0] == SCORINGS and parts[1].isdigit():
                files.setdefault(parts[1], set()).add(parts[2])
        for number in files:
            (self.run_dir(run_id) / SCORINGS / number).mkdir(parents=True, exist_ok=True)
        graded = [number for number in sorted(files) if SCORING in files[number]]
        reported = [number for number in sorted(files) if REPORT in files[number]]
        if not verdicts:
            self._page_files(run_id, reported[-1] if reported else None, files)
            return
        whole = {*graded[-1:], *reported[-1:]}
        wanted: list[tuple[str, Path]] = []
        for number, names in files.items():
            folder = self.run_dir(run_id) / SCORINGS / number
            for name in sorted(names - {CLAIM, HTML}):
                if name in (VERDICTS, INDEX) and number not in whole:
                    continue
                if not (folder / name).exists():
                    wanted.append((f"{SCORINGS}/{number}/{name}", folder / name))
        self._download(run_id, wanted)

    def _pointer_stands(self, run_id: str) -> bool:
        """Whether the run's pointer stands for its listing now: it was taken less than
        `LISTING_TTL_S` ago by `read_ahead`. The first listing after it checks it
        (`_check_pointer`)."""
        with self._guard:
            pointed = self._pointed.get(run_id)
        return pointed is not None and self.listings.clock() - pointed[0] < LISTING_TTL_S

    def _take_pointer(self, run_id: str, data: bytes) -> bool:
        """Put the copies that the run's pointer `data` holds in the run's folder; False
        when it is not a pointer of this format."""
        pointer = unpack(data)
        if pointer is None:
            return False
        folder = self.run_dir(run_id)
        copies = [(folder / MANIFEST, pointer.manifest)]
        if pointer.scoring is not None:
            scoring = folder / SCORINGS / pointer.scoring
            for name, copy in ((REPORT, pointer.report), (INDEX, pointer.index)):
                if copy is not None:
                    copies.append((scoring / name, copy))
        for path, copy in copies:
            if not path.exists():
                write(path, copy)
        with self._guard:
            self._pointed[run_id] = (self.listings.clock(), pointer.scoring)
        return True

    def _check_pointer(self, run_id: str, names: list[str]) -> None:
        """After the first listing since the pointer was taken: drop its copies that the
        listing does not show (a pointer naming a scoring without a report, or left
        behind by a run removed by hand)."""
        with self._guard:
            pointed = self._pointed.pop(run_id, None)
        if pointed is None:
            return
        copies = [MANIFEST]
        if pointed[1] is not None:
            copies += [f"{SCORINGS}/{pointed[1]}/{REPORT}", f"{SCORINGS}/{pointed[1]}/{INDEX}"]
        for name in copies:
            if name not in names:
                (self.run_dir(run_id) / name).unlink(missing_ok=True)

    def _page_files(self, run_id: str, latest: str | None, files: dict[str, set[str]]) -> None:
        """The report and the saved index of scoring `latest` (the latest reported)."""
        if latest is None:
            return
        folder = self.run_dir(run_id) / SCORINGS / latest
        self._download(
            run_id,
            [
                (f"{SCORINGS}/{latest}/{name}", folder / name)
                for name in (REPORT, INDEX)
                if name in files[latest] and not (folder / name).exists()
            ],
        )

    def _download(self, run_id: str, wanted: list[tuple[str, Path]]) -> None:
        """Download the objects `wanted` (name, local path), all at once."""
        if len(wanted) > 1:
            with ThreadPoolExecutor(min(FETCHES, len(wanted))) as pool:
                list(pool.map(lambda item: self.listings.download(run_id, *item), wanted))
        elif wanted:
            self.listings.download(run_id, *wanted[0])

    def fetch(self, run_id: str, name: str) -> None:
        path = self.run_dir(run_id) / name
        if not path.exists():
            self.listings.download(run_id, name, path)

    def new_scoring(self, run_id: str) -> Path:
        names = self.listings.run(run_id, fresh=True)
        numbers = [
            int(parts[1])
            for parts in (name.split("/") for name in names)
            if len(parts) == 3 and parts[0] == SCORINGS and parts[1].isdigit()
        ]
        number = max(numbers, default=0) + 1
        claim = json.dumps({"pid": os.getpid(), "claimed": time.time()}).encode()
        while self.bucket.create(f"{run_id}/{SCORINGS}/{number:04d}/{CLAIM}", claim) is None:
            number += 1
        self.listings.changed(run_id)
        folder = self.run_dir(run_id) / SCORINGS / f"{number:04d}"
        folder.mkdir(parents=True, exist_ok=False)
        return folder

    def discard_scoring(self, run_id: str, scoring: Path) -> None:
        """Remove the local files; the claimed number stays taken (never graded)."""
        shutil.rmtree(scoring, ignore_errors=True)

    def commit(self, run_id: str, scoring: Path, names: Sequence[str]) -> None:
        for name in names:
            path = scoring / name
            if not path.exists():
                continue
            key = f"{run_id}/{SCORINGS}/{scoring.name}/{name}"
            with naming(path):
                data = path.read_bytes()
            if self.bucket.create(key, data) is None:
                raise ProjectError(
                    f"{self.bucket.where(key)}: exists already; a scoring is never overwritten"
                )
        self.listings.changed(run_id)
        copied = (self.run_dir(run_id) / MANIFEST, scoring / REPORT, scoring / INDEX)
        if {REPORT, INDEX} & set(names) and all(path.exists() for path in copied):
            with naming(scoring):
                manifest, report, index = (path.read_bytes() for path in copied)
            advance(self.bucket, run_id, Latest(scoring.name, manifest, report, index))
