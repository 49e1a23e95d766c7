"""The pointer to a run's latest scoring in object storage (docs/runs.md#the-object-store-archive).

    <prefix>/<run_id>/latest.json    {"soev_latest": 1, "scoring": "0002", "manifest": "…",
                                      "report": "<report.json>", "index": "<index.json>"}
                                     user metadata `scoring: 0002` (`0000`: none yet)

Created with the run, naming no scoring (`"scoring": null`), then moved to each scoring.
A copy of the run's manifest and of the report and the saved index of its latest scoring:
what a viewer's run page reads, in one request, instead of the manifest and the run's
listing, and then the scoring's files that the listing names. It is a hint, never the mark
that a scoring is complete (its `report.json` is): a reader takes it for a run page in
place of a listing, and the next listing it takes checks it (`ObjectStore._check_pointer`).

It is moved forward by compare-and-swap on its ETag (`If-Match`; `If-None-Match: *` for the
first), after the scoring's report and index are archived, and never backwards: a writer
that finds it naming its scoring or a later one leaves it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from soev_pipeline.core.errors import ProjectError

from .bucket import Bucket

logger = logging.getLogger(__name__)

LATEST = "latest.json"
FORMAT = 1
"""The layout of `latest.json`; a pointer of another format is passed over."""
TRIES = 10
"""Compare-and-swap rounds before a writer gives up moving the pointer (another writer kept
changing it); readers then take the listing's way, as for a run without a pointer."""
SCORING_META = "scoring"
"""The object's user metadata that names its scoring: a writer reads it with a HEAD request,
without downloading the copies."""


@dataclass(frozen=True)
class Latest:
    """What a pointer names and holds: a scoring number (`0002`), the run's manifest, and
    the scoring's report and index; a run with no scoring yet has neither (None)."""

    scoring: str | None
    manifest: bytes
    report: bytes | None = None
    index: bytes | None = None

    @property
    def number(self) -> int:
        """The scoring's number; 0 before the first scoring."""
        return int(self.scoring) if self.scoring is not None else 0


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


def pack(latest: Latest) -> bytes:
    return json.dumps(
        {
            "soev_latest": FORMAT,
            "scoring": latest.scoring,
            "manifest": latest.manifest.decode("utf-8"),
            "report": _text(latest.report),
            "index": _text(latest.index),
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


def unpack(data: bytes) -> Latest | None:
    """The pointer in `data`; None when it is not one of this format."""
    try:
        raw = json.loads(data)
        if raw["soev_latest"] != FORMAT:
            return None
        scoring, manifest = raw["scoring"], raw["manifest"]
        files = [raw["report"], raw["index"]]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(manifest, str):
        return None
    if scoring is None and files == [None, None]:
        return Latest(None, manifest.encode("utf-8"))
    if not (isinstance(scoring, str) and scoring.isdigit() and len(scoring) == 4):
        return None
    if not all(isinstance(text, str) for text in files):
        return None
    report, index = (str(text).encode("utf-8") for text in files)
    return Latest(scoring, manifest.encode("utf-8"), report, index)


def start(bucket: Bucket, run_id: str, manifest: bytes) -> None:
    """Create the pointer of a new run, naming no scoring yet: a viewer of a run in
    progress reads it in one request too. A failure is a warning, as in `advance`."""
    try:
        bucket.create(
            f"{run_id}/{LATEST}", pack(Latest(None, manifest)), metadata={SCORING_META: "0000"}
        )
    except ProjectError as exc:
        logger.warning("%s; the run's latest scoring is found by listing it", exc)


def advance(bucket: Bucket, run_id: str, latest: Latest) -> bool:
    """Move the run's pointer to `latest` unless it names that scoring or a later one
    already; True when it now names `latest.scoring` or a later one.

    A failure is a warning, not an error: the scoring is complete without the pointer
    (its report is archived), and readers find it through the listing.
    """
    name = f"{run_id}/{LATEST}"
    data = pack(latest)
    meta = {SCORING_META: f"{latest.number:04d}"}
    try:
        for _ in range(TRIES):
            found = bucket.head(name)
            if found is None:
                if bucket.create(name, data, metadata=meta) is not None:
                    return True
                continue
            etag, metadata = found
            current = metadata.get(SCORING_META, "")
            if current.isdigit() and int(current) >= latest.number:
                return True
            if bucket.swap(name, data, etag, metadata=meta) is not None:
                return True
    except ProjectError as exc:
        logger.warning("%s; the run's latest scoring is found by listing it", exc)
        return False
    logger.warning(
        "%s: other writers kept moving the pointer; the run's latest scoring is found by "
        "listing it",
        bucket.where(name),
    )
    return False
