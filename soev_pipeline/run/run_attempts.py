"""A run's attempts as a comparison sees them: for every case its latest scoring graded
(test cases included), the passes of the attempts that ran, in attempt order, and how many
did not run (`run.unrun`); read from the archive, gathered while a report is built, or
made from graded attempts; and the run a comparison takes as the previous one.
`run.compare` pairs two of them.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Split
from soev_pipeline.project.paths import RunsDir

from .archive import VERDICTS, RunArchive, list_runs, naming
from .manifest import Manifest
from .results import GradedAttempt, UnrunTally
from .unrun import INTERRUPTED, MAX_UNRUN, AttemptLedger, read_ledger, tally, too_many


@dataclass(frozen=True, slots=True)
class CaseAttempts:
    """One case of a run: where it belongs, its digest, and how its attempts went.

    `passes` holds whether each attempt that ran passed, in attempt order; `unrun` counts
    the attempts that did not run, and `unrun_at` gives their places in attempt order,
    from 0 (None: they are the last `unrun` attempts). `suite` and `split` are None for a
    case none of whose attempts was archived.
    """

    suite: str | None
    split: Split | None
    digest: str | None
    passes: tuple[bool, ...]
    unrun: int = 0
    seconds: float = 0.0
    unrun_at: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.unrun_at is not None and (
            len(self.unrun_at) != self.unrun
            or any(not 0 <= at < self.attempts for at in self.unrun_at)
        ):
            raise ValueError(f"unrun_at {self.unrun_at} does not place {self.unrun} attempts")

    @property
    def attempts(self) -> int:
        return len(self.passes) + self.unrun

    @property
    def rate(self) -> float:
        """The one-run pass rate: attempts that did not run count as failed."""
        return sum(self.passes) / self.attempts if self.attempts else 0.0

    def first(self, m: int) -> float:
        """The pass rate over the first `m` attempts that ran (1 ≤ m ≤ len(passes))."""
        return sum(self.passes[:m]) / m

    def outcomes(self) -> tuple[bool | None, ...]:
        """Every attempt in attempt order: whether it passed, or None when it did not run."""
        gaps = set(
            range(len(self.passes), self.attempts) if self.unrun_at is None else self.unrun_at
        )
        ran = iter(self.passes)
        return tuple(None if at in gaps else next(ran) for at in range(self.attempts))

    def ran(self) -> tuple[int, ...]:
        """The places in attempt order, from 0, of the attempts that ran."""
        return tuple(at for at, passed in enumerate(self.outcomes()) if passed is not None)

    def bound(self, m: int, *, unrun_passed: bool) -> float:
        """The pass rate over the first `m` attempts (1 ≤ m ≤ attempts), those that did not
        run counted as passed when `unrun_passed`, else as failed."""
        head = self.outcomes()[:m]
        return sum(unrun_passed if passed is None else passed for passed in head) / m


@dataclass(frozen=True)
class RunAttempts:
    """The attempts of one scoring of a run, case by case, with the run's suite order."""

    run_id: str
    project: str
    suites: tuple[str, ...]
    k: int
    cases: Mapping[str, CaseAttempts]
    planned: int = 0
    unrun: UnrunTally = field(default_factory=UnrunTally)

    def inconclusive(self, max_unrun: float = MAX_UNRUN) -> bool:
        """Whether more than `max_unrun` of the run's planned attempts did not run."""
        return too_many(self.unrun.attempts, self.planned, max_unrun)


class AttemptsCollector:
    """Collects a scoring's graded attempts, with the run's ledger, into `RunAttempts`.

    Without a ledger (a report built from graded attempts alone) every graded attempt ran,
    and a planned attempt (of `k` per case) of a graded case that has no graded line was
    interrupted.
    """

    def __init__(self, k: int, ledger: AttemptLedger | None = None) -> None:
        self.k = k
        self.ledger = ledger
        self._attempts: dict[str, dict[int, bool]] = defaultdict(dict)
        self._place: dict[str, tuple[str, Split]] = {}

    def add(self, case_id: str, suite: str, split: Split, attempt: int, passed: bool) -> bool:
        """Record a graded attempt; return whether it ran (else it counts as failed)."""
        self._place[case_id] = (suite, split)
        self._attempts[case_id].setdefault(attempt, passed)
        return self.unrun_code(case_id, attempt) is None

    def unrun_code(self, case_id: str, attempt: int) -> str | None:
        """Why a graded attempt did not run, or None when it ran. (A graded attempt was
        archived, whatever the evidence says now: it was not interrupted.)"""
        if self.ledger is None:
            return None
        code = self.ledger.unrun.get((case_id, attempt))
        return None if code == INTERRUPTED else code

    def missing(self, case_id: str) -> list[int]:
        """The planned attempts of a graded case that have no graded line: interrupted."""
        graded = self._attempts.get(case_id, {})
        return [attempt for attempt in range(self.k) if attempt not in graded]

    def result(self, manifest: Manifest) -> RunAttempts:
        """The attempts of the run of `manifest`, from what was collected."""
        ledger = self.ledger
        codes: dict[tuple[str, int], str] = {}
        if ledger is not None:
            codes = {
                (case_id, attempt): code
                for (case_id, attempt), code in ledger.unrun.items()
                if code != INTERRUPTED or attempt not in self._attempts.get(case_id, {})
            }
        cases: dict[str, CaseAttempts] = {}
        for case_id, attempts in self._attempts.items():
            for attempt in self.missing(case_id):
                codes.setdefault((case_id, attempt), INTERRUPTED)
            ran: list[bool] = []
            unrun_at: list[int] = []
            for place, attempt in enumerate(sorted({*attempts, *self.missing(case_id)})):
                if attempt in attempts and self.unrun_code(case_id, attempt) is None:
                    ran.append(attempts[attempt])
                else:
                    unrun_at.append(place)
            cases[case_id] = CaseAttempts(
                *self._place[case_id],
                manifest.cases.get(case_id),
                tuple(ran),
                len(unrun_at),
                ledger.seconds.get(case_id, 0.0) if ledger is not None else 0.0,
                tuple(unrun_at),
            )
        if ledger is not None:
            for case_id, digest in manifest.cases.items():
                planned = [(case_id, attempt) for attempt in range(manifest.k)]
                if case_id not in cases and all(
                    ledger.unrun.get(key) == INTERRUPTED for key in planned
                ):
                    cases[case_id] = CaseAttempts(None, None, digest, (), manifest.k)
        return RunAttempts(
            manifest.run_id,
            manifest.project,
            manifest.suites,
            manifest.k,
            cases,
            len(manifest.cases) * manifest.k,
            tally(codes),
        )


def attempts_from_graded(
    manifest: Manifest, graded: Iterable[GradedAttempt], ledger: AttemptLedger | None = None
) -> RunAttempts:
    """The attempts of a scoring from its graded attempts (and the run's ledger)."""
    collector = AttemptsCollector(manifest.k, ledger)
    for attempt in graded:
        collector.add(
            attempt.case_id, attempt.suite, attempt.split, attempt.attempt, attempt.passed
        )
    return collector.result(manifest)


def _read(archive: RunArchive, manifest: Manifest, ledger: AttemptLedger) -> RunAttempts:
    report = archive.latest_report_path()
    if report is None:
        raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring yet")
    path = report.parent / VERDICTS
    collector = AttemptsCollector(manifest.k, ledger)
    with naming(path), path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                collector.add(
                    raw["case_id"], raw["suite"], raw["split"], int(raw["attempt"]), raw["passed"]
                )
            except (ValueError, KeyError, TypeError):
                raise ProjectError(f"{path}: line {number}: not a graded attempt") from None
    return collector.result(manifest)


def read_attempts(archive: RunArchive) -> RunAttempts:
    """The attempts of the run's latest scoring that has a report, with its evidence's
    verdict on which of them ran.

    Raises:
        ProjectError: the run does not exist or has no scoring yet, or a line of its
            verdicts or evidence does not read.
    """
    manifest = archive.manifest()
    return _read(archive, manifest, read_ledger(archive, manifest))


def _previous(
    runs_dir: RunsDir, manifest: Manifest, max_unrun: float
) -> tuple[RunArchive, Manifest, AttemptLedger] | None:
    earlier = [
        (run, other)
        for run, other in list_runs(runs_dir)
        if run.run_id != manifest.run_id
        and other.project == manifest.project
        and other.created_at < manifest.created_at
    ]
    for run, other in reversed(earlier):
        if run.latest_report_path() is None:
            continue
        try:
            ledger = read_ledger(run, other)
        except (ProjectError, OSError):
            continue
        if not ledger.inconclusive(max_unrun):
            return run, other, ledger
    return None


def previous_run(
    runs_dir: RunsDir, manifest: Manifest, *, max_unrun: float = MAX_UNRUN
) -> RunArchive | None:
    """The newest earlier run of the same project that has a report and is not
    inconclusive by itself (more than `max_unrun` of its attempts did not run), or None.

    A run whose evidence does not read is passed over: it cannot say what ran.
    """
    found = _previous(runs_dir, manifest, max_unrun)
    return None if found is None else found[0]


def latest_run(runs_dir: RunsDir, project: str) -> RunArchive | None:
    """The newest run of `project` in `runs_dir` that has a report, or None."""
    for run, manifest in reversed(list_runs(runs_dir)):
        if manifest.project == project and run.latest_report_path() is not None:
            return run
    return None


def previous_attempts(
    runs_dir: RunsDir, manifest: Manifest, ahead: PreviousAhead | None = None
) -> RunAttempts | None:
    """The attempts of the previous run (see `previous_run`), or None.

    A previous run whose scoring no longer reads is passed over with None, so that it
    cannot stop the aggregation of a new run. With `ahead` (`read_previous_ahead`), its
    attempts when no other run in `runs_dir` changed since they were read.
    """
    if ahead is not None and _runs_state(runs_dir, manifest.run_id) == ahead.state:
        return ahead.attempts
    found = _previous(runs_dir, manifest, MAX_UNRUN)
    if found is None:
        return None
    try:
        return _read(*found)
    except (ProjectError, OSError):
        return None


_FileState = tuple[str, int, int, int]


@dataclass(frozen=True)
class PreviousAhead:
    """The attempts of the previous run read ahead (while a run's attempts run), with the
    state of the other runs they were read from (`previous_attempts` takes them as read
    while that state holds)."""

    attempts: RunAttempts | None
    state: tuple[tuple[str, tuple[_FileState, ...]], ...]


def read_previous_ahead(runs_dir: RunsDir, manifest: Manifest) -> PreviousAhead | None:
    """The attempts of the previous run of the run of `manifest` (`previous_attempts`),
    with the state of the other runs; None for an object store, whose runs have no state
    to check cheaply.

    The state is taken before the attempts are read: a run that changes while they are
    read changes it too, and `previous_attempts` then reads them again.
    """
    state = _runs_state(runs_dir, manifest.run_id)
    if state is None:
        return None
    return PreviousAhead(previous_attempts(runs_dir, manifest), state)


def _runs_state(
    runs_dir: RunsDir, run_id: str
) -> tuple[tuple[str, tuple[_FileState, ...]], ...] | None:
    """What the choice and the attempts of a previous run depend on, cheap to take again:
    each other run's folder with the name, inode, size and modification time of its files
    and of its scorings' files (the archive writes a file whole under a new name, or
    appends to it). None for an object store, or a runs folder that cannot be listed."""
    if not isinstance(runs_dir, Path):
        return None
    try:
        with os.scandir(runs_dir) as entries:
            runs = sorted(e.name for e in entries if e.name != run_id and e.is_dir())
        return tuple((name, _files_state(runs_dir / name)) for name in runs)
    except OSError:
        return None


def _files_state(folder: Path, depth: int = 0) -> tuple[_FileState, ...]:
    state: list[_FileState] = []
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if entry.is_dir(follow_symlinks=False):
                if depth < 2:  # the run's scorings/ and each scoring in it
                    for name, inode, size, mtime in _files_state(Path(entry.path), depth + 1):
                        state.append((f"{entry.name}/{name}", inode, size, mtime))
                continue
            stat = entry.stat(follow_symlinks=False)
            state.append((entry.name, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(state)
