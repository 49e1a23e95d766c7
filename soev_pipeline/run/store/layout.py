"""The keys and headers of a run's evidence in object storage, and the one rule that makes
a run's attempts out of them (docs/runs.md#the-object-store-archive).

    batches/<NNNNNNNN>.jsonl      attempts of one command, created only if absent: a header
                                  line naming them, then their lines
    compacted/<NNNNNN>.jsonl      the run's attempts so far: a header line naming the
                                  objects it covers and the attempts it holds, then their lines
    attempts/<case>/<k>.<n>.json  one attempt (the layout before batches; still read)

An attempt's name is (case id, attempt, n): n is 0 for its first run and 1, 2, … when it
is run once more, so that the last of a (case, attempt) counts, as on disk. A name is kept
once: the copy that comes first in reading order, which is the latest compaction, then
the per-attempt objects it does not cover (by name), then the batches it does not cover
(by key). So when a paused command uploads late a batch of attempts that another command
archived too, every reader and every compaction keeps the same one copy of each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from soev_pipeline.core.errors import ProjectError

ATTEMPTS = "attempts/"
BATCHES = "batches/"
COMPACTED = "compacted/"
BATCH_HEADER = "soev_batch"
COMPACTION_HEADER = "soev_compaction"

Name = tuple[str, int, int]
"""An attempt's name: (case id, attempt, n)."""


def attempt_name(case_id: str, attempt: int, generation: int) -> str:
    """The key of one attempt's object in the per-attempt layout."""
    return f"{ATTEMPTS}{quote(case_id, safe='')}/{attempt}.{generation}.json"


def parse_attempt(key: str) -> Name | None:
    """The name of a per-attempt object's key; None for another key."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != ATTEMPTS.rstrip("/") or not parts[2].endswith(".json"):
        return None
    numbers = parts[2][: -len(".json")].split(".")
    if len(numbers) != 2 or not all(number.isdigit() for number in numbers):
        return None
    return unquote(parts[1]), int(numbers[0]), int(numbers[1])


def batch_key(number: int) -> str:
    return f"{BATCHES}{number:08d}.jsonl"


def batch_number(key: str) -> int | None:
    """The number of a batch's key; None for another key."""
    if not key.startswith(BATCHES) or not key.endswith(".jsonl"):
        return None
    digits = key[len(BATCHES) : -len(".jsonl")]
    return int(digits) if digits.isdigit() and "/" not in digits else None


def compaction_key(number: int) -> str:
    return f"{COMPACTED}{number:06d}.jsonl"


def compaction_number(key: str) -> int:
    return int(key[len(COMPACTED) : -len(".jsonl")])


def _header(kind: str, fields: dict[str, object]) -> bytes:
    return json.dumps({kind: 2 if kind == COMPACTION_HEADER else 1, **fields}).encode() + b"\n"


def batch_bytes(names: Sequence[Name], lines: Sequence[bytes]) -> bytes:
    """A batch object: its header, then the lines (each ending in a newline)."""
    return _header(BATCH_HEADER, {"holds": [list(name) for name in names]}) + b"".join(lines)


def compaction_bytes(covers: Iterable[str], holds: Iterable[Name], body: bytes) -> bytes:
    header = {"covers": sorted(covers), "holds": sorted(list(name) for name in holds)}
    return _header(COMPACTION_HEADER, header) + body


def _names(raw: object) -> list[Name]:
    if not isinstance(raw, list):
        raise TypeError
    names: list[Name] = []
    for item in raw:
        case_id, attempt, generation = item
        if not (
            isinstance(case_id, str) and isinstance(attempt, int) and isinstance(generation, int)
        ):
            raise TypeError
        names.append((case_id, attempt, generation))
    return names


def read_batch(where: str, data: bytes) -> list[tuple[Name, bytes]]:
    """A batch object's attempts: each name with its line.

    Raises:
        ProjectError: not a batch, or its header and its lines disagree.
    """
    header, _, body = data.partition(b"\n")
    try:
        names = _names(json.loads(header)["holds"])
    except (ValueError, KeyError, TypeError):
        raise ProjectError(f"{where}: line 1: not the header of a batch of attempts") from None
    lines = body.splitlines(keepends=True)
    if len(lines) != len(names):
        raise ProjectError(
            f"{where}: the header names {len(names)} attempts but {len(lines)} lines follow"
        )
    return list(zip(names, lines, strict=True))


@dataclass(frozen=True)
class Compaction:
    """A compaction's header: the keys it covers and the names of the attempts it holds."""

    covers: frozenset[str]
    holds: frozenset[Name]


def read_compaction_header(where: str, header: bytes) -> Compaction:
    """The header line of a compaction; one of the per-attempt layout holds the attempts
    whose objects it covers.

    Raises:
        ProjectError: not the header of a compaction.
    """
    try:
        raw = json.loads(header)
        covers = frozenset(str(key) for key in raw["covers"])
        if raw[COMPACTION_HEADER] == 1:
            holds = frozenset(name for key in covers if (name := parse_attempt(key)) is not None)
        else:
            holds = frozenset(_names(raw["holds"]))
    except (ValueError, KeyError, TypeError):
        raise ProjectError(f"{where}: line 1: not the header of a compaction") from None
    return Compaction(covers, holds)


def reading_order(loose: Iterable[str]) -> list[str]:
    """The keys a compaction does not cover, in the order they are read: the per-attempt
    objects by name (the generations of an attempt ascending), then the batches by key."""
    loose = list(loose)
    attempts = sorted(
        (key for key in loose if parse_attempt(key) is not None),
        key=lambda key: parse_attempt(key) or ("", -1, -1),
    )
    batches = sorted(key for key in loose if batch_number(key) is not None)
    return attempts + batches


def first_copies(
    kept: set[Name], objects: Iterable[tuple[str, list[tuple[Name, bytes]]]]
) -> Iterator[bytes]:
    """The lines of `objects` (in reading order) whose names are not in `kept` yet: the
    first copy of each name. Adds the names it yields to `kept`."""
    for _, attempts in objects:
        for name, line in attempts:
            if name not in kept:
                kept.add(name)
                yield line
