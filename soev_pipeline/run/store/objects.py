"""The object store: a run archive in S3-compatible object storage, for a cluster without a
shared disk (docs/runs.md#the-object-store-archive).

    <prefix>/<run_id>/manifest.json                   created only if absent
    <prefix>/<run_id>/lease.json                      who holds the run (`lease.Lease`)
    <prefix>/<run_id>/attempts/<case>/<attempt>.<n>.json
                                                      one attempt, created only if absent; n is
                                                      0, then 1, 2, ... for an attempt run again
    <prefix>/<run_id>/compacted/<NNNNNN>.jsonl        the attempts so far in one object: a header
                                                      line naming the attempt objects it covers,
                                                      then their lines
    <prefix>/<run_id>/scorings/<NNNN>/claim.json      the scoring's number, claimed if absent
    <prefix>/<run_id>/scorings/<NNNN>/verdicts.jsonl, scoring.json, report.html, report.json
                                                      report.json last: the scoring is complete

Attempts are uploaded by a pool of threads while the attempt loop goes on; when the attempt
step ends, its attempts are compacted into one object and the attempt objects it covers are
deleted, so that reading a run takes a few requests instead of one per attempt. A reader
takes the latest compaction and the attempt objects it does not cover.

While a command works on a run, the run's files are read and written in a cache folder of
this process, which is removed when it ends.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

from .base import RunLockedError
from .bucket import Bucket
from .files import naming
from .lease import Lease, lease_seconds
from .local import EVIDENCE, MANIFEST, SCORINGS

logger = logging.getLogger(__name__)

LEASE = "lease.json"
ATTEMPTS = "attempts/"
COMPACTED = "compacted/"
CLAIM = "claim.json"
VERDICTS = "verdicts.jsonl"
SCORING = "scoring.json"
REPORT = "report.json"
HTML = "report.html"
INDEX = "index.json"
COMPACTION_HEADER = "soev_compaction"
LISTING_TTL_S = 1.0
"""How long one process reuses a run's listing before asking the store again (a viewer's
page asks for several things of one run); its own writes renew it at once."""
UPLOADS = 16
"""Attempt uploads at once."""
QUEUED = 256
"""Attempts waiting for their upload at most; the attempt loop waits beyond this."""
FETCHES = 16


def attempt_name(case_id: str, attempt: int, generation: int) -> str:
    return f"{ATTEMPTS}{quote(case_id, safe='')}/{attempt}.{generation}.json"


def parse_attempt(name: str) -> tuple[str, int, int] | None:
    """(case id, attempt, generation) of an attempt object's name; None for another name."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != ATTEMPTS.rstrip("/") or not parts[2].endswith(".json"):
        return None
    numbers = parts[2][: -len(".json")].split(".")
    if len(numbers) != 2 or not all(number.isdigit() for number in numbers):
        return None
    return unquote(parts[1]), int(numbers[0]), int(numbers[1])


def _order(name: str) -> tuple[str, int, int]:
    return parse_attempt(name) or ("", -1, -1)


def in_generation_order(names: Sequence[str]) -> list[str]:
    """`names` with the generations of each (case, attempt) in ascending order, each group
    keeping the places its names had: so the last line of an attempt is its newest."""
    places: dict[tuple[str, int], list[int]] = {}
    for place, name in enumerate(names):
        parsed = parse_attempt(name)
        if parsed is not None:
            places.setdefault(parsed[:2], []).append(place)
    ordered = list(names)
    for group in places.values():
        if len(group) > 1:
            members = sorted((names[place] for place in group), key=_order)
            for place, name in zip(group, members, strict=True):
                ordered[place] = name
    return ordered


class ObjectStore:
    """The runs under one `s3://bucket/prefix` (see the module's docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bucket = Bucket(url)
        self.cache = Path(tempfile.mkdtemp(prefix="soev-runs-"))
        atexit.register(shutil.rmtree, self.cache, True)
        self._guard = threading.RLock()
        self._leases: dict[str, tuple[Lease, list[int]]] = {}
        self._listings: dict[str, tuple[float, list[str]]] = {}
        self._synced: dict[str, tuple[str | None, tuple[str, ...]]] = {}
        self._compactions: dict[tuple[str, str], frozenset[str]] = {}
        self._seen: dict[str, frozenset[str]] = {}
        self._writers: dict[str, ObjectEvidenceWriter] = {}

    # Names and places

    def where(self, run_id: str, name: str = "") -> str:
        return self.bucket.where(f"{run_id}/{name}" if name else run_id)

    def run_dir(self, run_id: str) -> Path:
        return self.cache / run_id

    def _objects(self, run_id: str) -> Path:
        """Where this process keeps the objects it downloaded whole (compactions)."""
        return self.cache / ".objects" / run_id

    def _listing(self, run_id: str, *, fresh: bool = False) -> list[str]:
        """The names of the run's objects, below `<run_id>/`."""
        with self._guard:
            found = self._listings.get(run_id)
            if found is not None and not fresh and time.monotonic() - found[0] < LISTING_TTL_S:
                return found[1]
        started = time.monotonic()
        names = [name.split("/", 1)[1] for name in self.bucket.list(f"{run_id}/")]
        with self._guard:
            self._listings[run_id] = (started, names)
        return names

    def _changed(self, run_id: str) -> None:
        with self._guard:
            self._listings.pop(run_id, None)

    def _download(self, run_id: str, name: str, path: Path) -> bool:
        """Write the object to `path` (through a rename); False when it is gone."""
        found = self.bucket.get(f"{run_id}/{name}")
        if found is None:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{threading.get_ident()}.tmp")
        with naming(path):
            temporary.write_bytes(found[0])
            os.replace(temporary, path)
        return True

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
        path = self.run_dir(run_id) / MANIFEST
        return path.exists() or self._download(run_id, MANIFEST, path)

    def create_run(self, run_id: str, manifest: str) -> bool:
        self.bucket.probe()
        if self.bucket.create(f"{run_id}/{MANIFEST}", manifest.encode("utf-8")) is None:
            return False
        self._changed(run_id)
        self._changed("")  # the list of runs
        folder = self.run_dir(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).write_text(manifest, encoding="utf-8")
        (folder / EVIDENCE).touch()
        return True

    def run_ids(self) -> list[str]:
        """The runs' folders under the prefix that hold a manifest (listed at most once a
        `LISTING_TTL_S`, as a run's objects are)."""
        with self._guard:
            found = self._listings.get("")
        if found is None or time.monotonic() - found[0] >= LISTING_TTL_S:
            started = time.monotonic()
            names = [name.rstrip("/") for name in self.bucket.list("", delimiter=True)]
            found = (started, names)
            with self._guard:
                self._listings[""] = found
        return [name for name in found[1] if not name.startswith(".") and self.has_manifest(name)]

    # Evidence

    def evidence_writer(self, run_id: str) -> ObjectEvidenceWriter:
        writer = ObjectEvidenceWriter(self, run_id, self.lease(run_id))
        with self._guard:
            self._writers[run_id] = writer
        return writer

    def seen(self, run_id: str) -> frozenset[str]:
        """The attempt objects of the run as this process last read them: what its plan of
        attempts was made from. A writer numbers its attempts from this, not from what is
        archived now, so an attempt that another command archived meanwhile is refused
        rather than kept as a second line (`ObjectEvidenceWriter`)."""
        with self._guard:
            known = self._seen.get(run_id)
        if known is None:
            self.refresh_evidence(run_id)
            with self._guard:
                known = self._seen[run_id]
        return known

    def _compaction(self, run_id: str, name: str | None) -> frozenset[str]:
        """The attempt objects that compaction `name` covers (downloaded once)."""
        if name is None:
            return frozenset()
        with self._guard:
            known = self._compactions.get((run_id, name))
        if known is not None:
            return known
        path = self._objects(run_id) / name
        if not self._download(run_id, name, path):
            raise ProjectError(f"{self.where(run_id, name)}: the compaction was deleted")
        with path.open("rb") as file:
            header = file.readline()
        try:
            covers = frozenset(json.loads(header)["covers"])
        except (ValueError, KeyError, TypeError):
            raise ProjectError(
                f"{self.where(run_id, name)}: line 1: not the header of a compaction"
            ) from None
        with self._guard:
            self._compactions[(run_id, name)] = covers
        return covers

    def evidence_state(
        self, run_id: str, *, fresh: bool = False
    ) -> tuple[str | None, frozenset[str], list[str]]:
        """The run's latest compaction, what it covers, and the attempt objects it does not
        cover (in generation order)."""
        names = self._listing(run_id, fresh=fresh)
        compactions = sorted(name for name in names if name.startswith(COMPACTED))
        latest = compactions[-1] if compactions else None
        covers = self._compaction(run_id, latest)
        loose = [name for name in names if name.startswith(ATTEMPTS) and name not in covers]
        loose.sort(key=_order)
        return latest, covers, loose

    def _fetch(self, run_id: str, names: Sequence[str]) -> dict[str, bytes] | None:
        """The bytes of the attempt objects; None when one was deleted meanwhile (a
        compaction took it: read again)."""
        if not names:
            return {}

        def one(name: str) -> tuple[str, bytes | None]:
            found = self.bucket.get(f"{run_id}/{name}")
            return name, None if found is None else found[0]

        with ThreadPoolExecutor(min(FETCHES, len(names))) as pool:
            fetched = dict(pool.map(one, names))
        if any(data is None for data in fetched.values()):
            return None
        return {name: data for name, data in fetched.items() if data is not None}

    def refresh_evidence(self, run_id: str) -> None:
        """Write the cache's `evidence.jsonl`: the latest compaction's lines, then the
        lines of the attempt objects it does not cover. The uploads of this process's open
        writer finish first, so that it reads what it appended."""
        with self._guard:
            writer = self._writers.get(run_id)
        if writer is not None:
            writer.drain()
        for attempt in range(3):
            latest, covers, loose = self.evidence_state(run_id, fresh=attempt > 0)
            with self._guard:
                self._seen[run_id] = covers | frozenset(loose)
            path = self.run_dir(run_id) / EVIDENCE
            if self._synced.get(run_id) == (latest, tuple(loose)) and path.exists():
                return
            bodies = self._fetch(run_id, loose)
            if bodies is None:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{EVIDENCE}.{threading.get_ident()}.tmp")
            with naming(path), temporary.open("wb") as out:
                if latest is not None:
                    with (self._objects(run_id) / latest).open("rb") as compacted:
                        compacted.readline()
                        shutil.copyfileobj(compacted, out)
                for name in loose:
                    out.write(bodies[name])
            os.replace(temporary, path)
            with self._guard:
                self._synced[run_id] = (latest, tuple(loose))
            return
        raise ProjectError(f"{self.where(run_id)}: the attempts kept changing while read")

    def compact(self, run_id: str, ours: Sequence[tuple[str, bytes]]) -> None:
        """Compact the run's attempt objects into one object, then delete the ones it covers.

        `ours` are the attempts this process uploaded, in the order they finished: their
        bytes need not be read back. A compaction is created only if its number is free;
        when another made one first, this reads again and takes the next number.
        """
        known = dict(ours)
        for _ in range(5):
            latest, covers, loose = self.evidence_state(run_id, fresh=True)
            if not loose:
                break
            others = [name for name in loose if name not in known]
            bodies = self._fetch(run_id, others)
            if bodies is None:
                continue
            bodies.update((name, data) for name, data in known.items() if name in loose)
            listed = set(loose)
            order = in_generation_order([name for name, _ in ours if name in listed] + others)
            number = int(latest[len(COMPACTED) : -len(".jsonl")]) + 1 if latest else 1
            name = f"{COMPACTED}{number:06d}.jsonl"
            header = json.dumps({COMPACTION_HEADER: 1, "covers": sorted(covers | listed)})
            parts = [header.encode() + b"\n"]
            if latest is not None:
                with (self._objects(run_id) / latest).open("rb") as compacted:
                    compacted.readline()
                    parts.append(compacted.read())
            parts += [bodies[item] for item in order]
            data = b"".join(parts)
            if self.bucket.create(f"{run_id}/{name}", data) is not None:
                self._keep_compaction(run_id, name, data, covers | listed)
                break
        self._changed(run_id)
        latest, covers, _ = self.evidence_state(run_id, fresh=True)
        covered = [name for name in self._listing(run_id) if name in covers]
        if covered:
            self.bucket.delete([f"{run_id}/{name}" for name in covered])
            self._changed(run_id)

    def _keep_compaction(
        self, run_id: str, name: str, data: bytes, covers: frozenset[str] | set[str]
    ) -> None:
        """Keep the compaction this process just created as if it had downloaded it: the
        readers after it (grading) need not download it again."""
        path = self._objects(run_id) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{threading.get_ident()}.tmp")
        with naming(path):
            temporary.write_bytes(data)
            os.replace(temporary, path)
        with self._guard:
            self._compactions[(run_id, name)] = frozenset(covers)

    # Scorings

    def refresh_scorings(self, run_id: str, *, verdicts: bool = True) -> None:
        """Download the scorings' files this process has not, all at once: the small ones,
        and the saved index and (with `verdicts`) the verdicts of the latest graded and the
        latest reported scoring. Never the HTML report: no reader opens it from here (it is
        written, then published, by the command that makes it)."""
        files: dict[str, set[str]] = {}
        for name in self._listing(run_id):
            parts = name.split("/")
            if len(parts) == 3 and parts[0] == SCORINGS and parts[1].isdigit():
                files.setdefault(parts[1], set()).add(parts[2])
        graded = [number for number in sorted(files) if SCORING in files[number]]
        reported = [number for number in sorted(files) if REPORT in files[number]]
        whole = {*graded[-1:], *reported[-1:]}
        wanted: list[tuple[str, Path]] = []
        for number, names in files.items():
            folder = self.run_dir(run_id) / SCORINGS / number
            folder.mkdir(parents=True, exist_ok=True)
            for name in sorted(names - {CLAIM, HTML}):
                if name in (VERDICTS, INDEX) and number not in whole:
                    continue
                if name == VERDICTS and not verdicts:
                    continue
                if not (folder / name).exists():
                    wanted.append((f"{SCORINGS}/{number}/{name}", folder / name))
        if len(wanted) > 1:
            with ThreadPoolExecutor(min(FETCHES, len(wanted))) as pool:
                list(pool.map(lambda item: self._download(run_id, *item), wanted))
        elif wanted:
            self._download(run_id, *wanted[0])

    def fetch(self, run_id: str, name: str) -> None:
        path = self.run_dir(run_id) / name
        if not path.exists():
            self._download(run_id, name, path)

    def new_scoring(self, run_id: str) -> Path:
        names = self._listing(run_id, fresh=True)
        numbers = [
            int(parts[1])
            for parts in (name.split("/") for name in names)
            if len(parts) == 3 and parts[0] == SCORINGS and parts[1].isdigit()
        ]
        number = max(numbers, default=0) + 1
        claim = json.dumps({"pid": os.getpid(), "claimed": time.time()}).encode()
        while self.bucket.create(f"{run_id}/{SCORINGS}/{number:04d}/{CLAIM}", claim) is None:
            number += 1
        self._changed(run_id)
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
        self._changed(run_id)


class ObjectEvidenceWriter:
    """Uploads each attempt as an object of its own, created only if absent, in the
    background; `close` waits for the uploads and compacts the run's attempts."""

    def __init__(self, store: ObjectStore, run_id: str, lease: Lease | None) -> None:
        self.store, self.run_id, self.lease = store, run_id, lease
        self._generations: dict[tuple[str, int], int] = {}
        for name in store.seen(run_id):
            parsed = parse_attempt(name)
            if parsed is not None:
                key = parsed[:2]
                self._generations[key] = max(self._generations.get(key, -1), parsed[2])
        self._pool = ThreadPoolExecutor(UPLOADS, thread_name_prefix="soev-upload")
        self._slots = threading.BoundedSemaphore(QUEUED)
        self._ours: list[tuple[str, bytes]] = []
        self._refused: set[str] = set()
        self._errors: list[BaseException] = []
        self._closed = False
        self._pending = 0
        self._settled = threading.Condition()
        self.written = 0

    def check(self) -> None:
        if self._errors:
            raise self._errors[0]
        if self.lease is not None and not self.lease.valid():
            raise RunLockedError(
                f"{self.store.where(self.run_id)}: this command lost run {self.run_id!r} (it "
                f"paused longer than its {self.lease.seconds:g} s lease and another command "
                "took the run); its finished attempts are archived"
            )

    def append(self, evidence: Evidence) -> str:
        self.check()
        key = (evidence.case_id, evidence.attempt)
        generation = self._generations.get(key, -1) + 1
        self._generations[key] = generation
        name = attempt_name(evidence.case_id, evidence.attempt, generation)
        line = redact(evidence.model_dump_json())
        data = (line + "\n").encode("utf-8")
        self._slots.acquire()
        with self._settled:
            self._pending += 1
        try:
            self._pool.submit(self._upload, name, data)
        except BaseException:
            self._finished()
            raise
        self._ours.append((name, data))
        self.written += 1
        return line

    def _upload(self, name: str, data: bytes) -> None:
        try:
            if self.store.bucket.create(f"{self.run_id}/{name}", data) is None:
                self._refused.add(name)
        except BaseException as exc:
            self._errors.append(exc)
        finally:
            self._finished()

    def _finished(self) -> None:
        self._slots.release()
        with self._settled:
            self._pending -= 1
            self._settled.notify_all()

    def drain(self) -> None:
        """Wait until every attempt appended so far is uploaded (or refused)."""
        with self._settled:
            self._settled.wait_for(lambda: self._pending == 0)
        self.store._changed(self.run_id)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        with self.store._guard:
            if self.store._writers.get(self.run_id) is self:
                del self.store._writers[self.run_id]
        self.store._changed(self.run_id)
        if self._errors:
            raise self._errors[0]
        if self._refused:
            logger.warning(
                "%s: %d attempts were archived by another command first; this command's "
                "copies were not kept",
                self.store.where(self.run_id),
                len(self._refused),
            )
        ours = [(name, data) for name, data in self._ours if name not in self._refused]
        with self.store._guard:
            seen = self.store._seen.get(self.run_id, frozenset())
            self.store._seen[self.run_id] = seen | {name for name, _ in ours}
        self.store.compact(self.run_id, ours)

    def __enter__(self) -> ObjectEvidenceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
