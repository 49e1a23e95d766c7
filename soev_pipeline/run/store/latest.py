"""The pointer to a run's latest scoring in object storage (docs/runs.md#the-object-store-archive).

    <prefix>/<run_id>/latest.json    {"soev_latest": 1, "scoring": "0002",
                                      "report": "<report.json>", "index": "<index.json>"}

A copy of the report and the saved index of the run's latest scoring, so that a viewer that
opens the run downloads them with its manifest and its listing, all at once, instead of
waiting for the listing to learn which scoring to download. It is a hint, never the mark
that a scoring is complete (its `report.json` is): a reader uses it only when the run's
listing, asked for at the same time, shows that it names the latest scoring that has a
report and an index, and downloads them as before otherwise.

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
    """What a pointer names and holds: a scoring number (`0002`) and its two files."""

    scoring: str
    report: bytes
    index: bytes


def pack(latest: Latest) -> bytes:
    return json.dumps(
        {
            "soev_latest": FORMAT,
            "scoring": latest.scoring,
            "report": latest.report.decode("utf-8"),
            "index": latest.index.decode("utf-8"),
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
        scoring, report, index = raw["scoring"], raw["report"], raw["index"]
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(scoring, str) and scoring.isdigit()):
        return None
    if not (isinstance(report, str) and isinstance(index, str)):
        return None
    return Latest(scoring, report.encode("utf-8"), index.encode("utf-8"))


def advance(bucket: Bucket, run_id: str, latest: Latest) -> bool:
    """Move the run's pointer to `latest` unless it names that scoring or a later one
    already; True when it now names `latest.scoring` or a later one.

    A failure is a warning, not an error: the scoring is complete without the pointer
    (its report is archived), and readers find it through the listing.
    """
    name = f"{run_id}/{LATEST}"
    data = pack(latest)
    meta = {SCORING_META: latest.scoring}
    try:
        for _ in range(TRIES):
            found = bucket.head(name)
            if found is None:
                if bucket.create(name, data, metadata=meta) is not None:
                    return True
                continue
            etag, metadata = found
            current = metadata.get(SCORING_META, "")
            if current.isdigit() and int(current) >= int(latest.scoring):
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
