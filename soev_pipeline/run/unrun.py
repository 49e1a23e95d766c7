"""Attempts that did not run (docs/statistics.md#attempts-that-did-not-run): the answers the
harness could not get.

An attempt did not run when a turn of it (of the case or of a variant) failed for a reason
of infrastructure: the system could not be reached (`connect_error`), or it answered HTTP
429 or 5xx. The status decides, so a 503 whose problem+json body names its own code
(`service_unavailable`) did not run either; evidence written before failures recorded
their status is read by its code (`http_429`, `http_5xx`). A planned attempt (a case of
the manifest times k) without an evidence line was interrupted, and did not run either.
Every other failure (a timeout, a malformed stream, a 4xx, a `failure` or `error` event)
is the assistant's behaviour and counts as quality.

`did_not_run` is the one classification; the report, `compare`, `plan` and the Dagster
check all see it through `AttemptLedger`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from soev_pipeline.core.models import Evidence, Failure, Split

from .archive import RunArchive
from .manifest import Manifest
from .results import INTERRUPTED as INTERRUPTED  # the code of an attempt without evidence
from .results import UnrunTally

MAX_UNRUN = 0.05
"""The default share of a run's attempts that may not have run before it is inconclusive."""
CONNECT_ERROR = "connect_error"
_STATUS_CODE = re.compile(r"http_(429|5\d\d)")


def infrastructure(failure: Failure) -> bool:
    """Whether a failed turn is the infrastructure's doing: no connection, HTTP 429 or 5xx."""
    status = failure.http_status
    if status is not None:
        return status == 429 or 500 <= status <= 599
    return failure.code == CONNECT_ERROR or _STATUS_CODE.fullmatch(failure.code) is not None


def did_not_run(evidence: Evidence) -> str | None:
    """The failure code that kept the attempt from running, or None when it ran."""
    for turn in evidence.all_turns():
        if turn.failure is not None and infrastructure(turn.failure):
            return turn.failure.code
    return None


def tally(codes: Mapping[tuple[str, int], str]) -> UnrunTally:
    """The tally of the attempts that did not run, from their codes: most frequent first."""
    counts = Counter(codes.values())
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return UnrunTally(attempts=len(codes), codes=dict(ordered))


def too_many(unrun: int, planned: int, max_unrun: float = MAX_UNRUN) -> bool:
    """Whether more than the share `max_unrun` of `planned` attempts did not run."""
    return planned > 0 and unrun > max_unrun * planned


@dataclass(frozen=True)
class AttemptLedger:
    """What the evidence of a run says about its planned attempts.

    Attributes:
        planned: the attempts the manifest plans, its cases times k.
        unrun: (case id, attempt) → code of each planned attempt that did not run.
        seconds: case id → the sum of its turns' durations over its archived attempts.
        place: case id → (suite, split) of each case with evidence.
    """

    planned: int
    unrun: Mapping[tuple[str, int], str]
    seconds: Mapping[str, float]
    place: Mapping[str, tuple[str, Split]]

    def tally(self) -> UnrunTally:
        return tally(self.unrun)

    def inconclusive(self, max_unrun: float = MAX_UNRUN) -> bool:
        """Whether the run is inconclusive by itself: too many attempts did not run."""
        return too_many(len(self.unrun), self.planned, max_unrun)


class LedgerFold:
    """The ledger of a run, folded one attempt's evidence at a time: `read_ledger` folds
    the archive's attempts as `RunArchive.iter_attempts` reads them, and a new run's
    attempts are folded as they are archived (`stream.ArchivedStream`).

    Each (case, attempt) is to be added once, its line that counts, in the order of the
    archive. Attempts the manifest does not plan are passed over.
    """

    def __init__(self, manifest: Manifest) -> None:
        self._manifest = manifest
        self._codes: dict[tuple[str, int], str] = {}
        self._seen: set[tuple[str, int]] = set()
        self._seconds: dict[str, float] = defaultdict(float)
        self._place: dict[str, tuple[str, Split]] = {}

    def add(self, evidence: Evidence) -> None:
        key = (evidence.case_id, evidence.attempt)
        if evidence.case_id not in self._manifest.cases or evidence.attempt >= self._manifest.k:
            return
        self._seen.add(key)
        self._place[evidence.case_id] = (evidence.suite, evidence.split)
        self._seconds[evidence.case_id] += sum(turn.duration_s for turn in evidence.all_turns())
        code = did_not_run(evidence)
        if code is not None:
            self._codes[key] = code

    def ledger(self) -> AttemptLedger:
        """The ledger of the attempts added so far; a planned attempt not added was
        interrupted."""
        manifest = self._manifest
        codes = dict(self._codes)
        for case_id in manifest.cases:
            for attempt in range(manifest.k):
                if (case_id, attempt) not in self._seen:
                    codes[(case_id, attempt)] = INTERRUPTED
        planned = len(manifest.cases) * manifest.k
        return AttemptLedger(planned, codes, dict(self._seconds), dict(self._place))


def read_ledger(archive: RunArchive, manifest: Manifest) -> AttemptLedger:
    """Read the run's evidence once (streamed) into its ledger.

    The last line of an attempt counts, as in grading (`RunArchive.iter_attempts`): an
    attempt that did not run and ran when it was tried once more ran. Lines of attempts
    the manifest does not plan are passed over.

    Raises:
        ProjectError: a line other than the last is not valid evidence.
    """
    fold = LedgerFold(manifest)
    for evidence in archive.iter_attempts(warn=False):  # grading warned already
        fold.add(evidence)
    return fold.ledger()
