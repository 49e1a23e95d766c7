"""The runs of one project as the viewer reads them: manifests, reports, indexes, comparisons.

Everything is read through the run API and cached by the size and modification time of the
files it came from, so a page after the first costs only what it shows, and a rescore or a
run still appending is seen at the next request. The store is shared by the server's
worker threads: each cache entry is built once, under a lock of its own.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Case
from soev_pipeline.corpus import CorpusLookup
from soev_pipeline.probes import SavedProbing, read_probing
from soev_pipeline.project import LoadedProject, ProjectPaths, probes_file
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.run.archive import SCORINGS, VERDICTS, RunArchive, check_run_id, list_runs
from soev_pipeline.run.compare import compare_runs
from soev_pipeline.run.manifest import Manifest
from soev_pipeline.run.results import Comparison, Report
from soev_pipeline.run.run_attempts import RunAttempts, previous_run, read_attempts

from .index import RunIndex
from .saved_index import INDEX, open_index
from .translate import _

T = TypeVar("T")
INDEXES_KEPT = 4
"""Run indexes kept in memory at once (a 20,000-attempt run's index takes tens of MB)."""


class NotFound(LookupError):
    """What a page asked for does not exist (or is not shown: a test case is never found)."""


@dataclass(frozen=True)
class RunSummary:
    """A run in the list of runs: its manifest and its latest report, if it has one."""

    archive: RunArchive
    manifest: Manifest
    report: Report | None
    problem: str | None
    """Why the report could not be read, when it could not."""

    @property
    def run_id(self) -> str:
        return self.archive.run_id

    @property
    def started(self) -> datetime:
        return self.manifest.created_at


def _signature(*paths: Path) -> tuple[object, ...]:
    signature: list[object] = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            signature.append(None)
            continue
        signature.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


signature = _signature


def _given(value: T) -> Callable[[], T]:
    """A builder of a value already made."""
    return lambda: value


"""The size and modification time of each of some files: a cache key that changes with them."""


def report_of(path: Path) -> Report:
    """The report.json of a scoring, without its case list (the index lists the cases).

    Raises:
        ProjectError: the file is not a valid report.
    """
    try:
        raw = json.loads(path.read_bytes())
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        return Report.model_validate({**raw, "cases": []})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ProjectError(f"{path}: not a valid report ({field}: {first['msg']})") from None
    except ValueError as exc:
        raise ProjectError(f"{path}: not a valid report ({exc})") from None


class _Cache:
    """Values by key, each built once per signature of its files; the oldest let go first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[Hashable, tuple[tuple[object, ...], Any]] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: Hashable, signature: tuple[object, ...], build: Callable[[], T]) -> T:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                found = self._values.get(key)
                if found is not None and found[0] == signature:
                    self._values.move_to_end(key)
                    value: T = found[1]
                    return value
            value = build()
            with self._guard:
                self._values[key] = (signature, value)
                self._values.move_to_end(key)
                while len(self._values) > self._size:
                    self._values.popitem(last=False)
            return value

    def peek(self, key: Hashable) -> Any:
        """The value last built for `key`, whatever its signature; None without one."""
        with self._guard:
            found = self._values.get(key)
        return None if found is None else found[1]


class RunStore:
    """The runs of a loaded project in `runs_dir`, read on demand and cached."""

    def __init__(self, loaded: LoadedProject, runs_dir: RunsDir) -> None:
        self.loaded = loaded
        self.runs_dir = runs_dir
        self.cases: dict[str, Case] = {case.id: case for case in loaded.cases()}
        self.test_ids = frozenset(case.id for case in self.cases.values() if case.split == "test")
        """The project's test cases now: never shown, also where a run graded one as dev."""
        corpus = loaded.context.corpus
        self.corpus = corpus if isinstance(corpus, CorpusLookup) else None
        self._reports = _Cache(256)
        self._indexes = _Cache(INDEXES_KEPT)
        self._comparisons = _Cache(32)
        self._memo = _Cache(32)
        self._previous: dict[str, RunArchive] = {}

    @property
    def project(self) -> str:
        return self.loaded.project.name

    @property
    def suites(self) -> list[str]:
        return [entry.name for entry in self.loaded.project.suites]

    def shown(self, case_id: str) -> bool:
        """Whether a case named by a run may be shown: any but a test case of the project."""
        return case_id not in self.test_ids

    def dev_case(self, case_id: str) -> Case | None:
        """The project's definition of a dev case now; None for a test case or an unknown id."""
        case = self.cases.get(case_id)
        return case if case is not None and case.split == "dev" else None

    def runs(self) -> list[RunSummary]:
        """The project's runs, newest first (by the time each started)."""
        found = []
        for archive, manifest in reversed(list_runs(self.runs_dir)):
            if manifest.project != self.project:
                continue
            report: Report | None = None
            problem: str | None = None
            try:
                report = self.report(archive)
            except (ProjectError, OSError) as exc:
                problem = str(exc)
            found.append(RunSummary(archive, manifest, report, problem))
        return found

    def archive(self, run_id: str) -> tuple[RunArchive, Manifest]:
        """The run `run_id` of this project with its manifest.

        Raises:
            NotFound: no such run of this project.
        """
        try:
            archive = RunArchive(self.runs_dir, check_run_id(run_id))
        except ProjectError:
            raise NotFound(_("no such run")) from None
        archive.read_ahead()
        if not archive.exists():
            raise NotFound(_("no run {run!r}").format(run=run_id))
        manifest = archive.manifest()
        if manifest.project != self.project:
            raise NotFound(_("run {run!r} belongs to another project").format(run=run_id))
        return archive, manifest

    def report(self, archive: RunArchive) -> Report | None:
        """The latest report of a run, without its case list; None when it has none yet."""
        path = archive.latest_report_path(verdicts=False)
        if path is None:
            return None
        return self._reports.get(("report", path), _signature(path), lambda: report_of(path))

    def index(self, archive: RunArchive) -> RunIndex | None:
        """The index of the run's latest scoring that has a report; None without one.

        The scoring's saved index is taken while it fits (`saved_index.open_index`): the
        run's verdicts and evidence are then read only when a page shows an attempt or
        searches (an object store's are downloaded in the background meanwhile). Verdicts
        are never rewritten (an object store's are created only once), so the index is kept
        while the report and the saved index are; the index checks the verdicts when it
        first reads them.
        """
        report = archive.latest_report_path(verdicts=False)
        if report is None:
            return None
        scoring = report.parent
        return self._indexes.get(
            ("index", archive.path),
            _signature(report, scoring / INDEX),
            lambda: open_index(
                scoring,
                archive.evidence_path,
                hidden=self.test_ids,
                refresh=archive.evidence_file,
                fetch=lambda: archive.fetch(f"{SCORINGS}/{scoring.name}/{VERDICTS}"),
            ),
        )

    def prefetch(self, run_id: str) -> None:
        """Start bringing the verdicts and the evidence of the run's index that a page just
        sent was made from (`RunIndex.prefetch`), for the case pages after it."""
        try:
            path = RunArchive(self.runs_dir, run_id).path
        except ProjectError:
            return
        index = self._indexes.peek(("index", path))
        if isinstance(index, RunIndex):
            index.prefetch()

    def index_of(self, run_id: str) -> RunIndex | None:
        """The index of run `run_id` as `index` gives it; None when there is no such run
        (an address may name any) or it has no report yet."""
        try:
            archive, _manifest = self.archive(run_id)
        except NotFound:
            return None
        return self.index(archive)

    def baseline(self, manifest: Manifest, wanted: str) -> RunArchive | None:
        """The baseline a comparison page asks for: a run id, or `previous`.

        Raises:
            NotFound: `wanted` names no run of this project.
        """
        if wanted == "previous":
            known = self._previous.get(manifest.run_id)
            return known if known is not None else previous_run(self.runs_dir, manifest)
        archive, _manifest = self.archive(wanted)
        return archive

    def comparison(self, run: RunArchive, baseline: RunArchive) -> Comparison:
        """`soev-evals compare RUN BASELINE` of the two runs' latest scorings.

        Raises:
            ProjectError: a run has no scoring, or the runs share no case.
        """
        paths = [run.latest_report_path(), baseline.latest_report_path()]
        if paths[0] is None or paths[1] is None:
            unscored = run if paths[0] is None else baseline
            raise ProjectError(f"run {unscored.run_id!r} has no scoring yet")
        return self._comparisons.get(
            ("compare", run.path, baseline.path),
            _signature(*(path.parent / VERDICTS for path in paths if path is not None)),
            lambda: compare_runs(run, baseline, attempts=self.attempts),
        )

    def remember(self, attempts: Iterable[RunAttempts], comparison: Comparison | None) -> None:
        """Take what the aggregate step of a new scoring made as read, for the pages written
        after it: the attempts of runs' latest scorings (`attempts`), and the comparison of
        the run with its previous run (`comparison`), which is then its `previous` baseline.
        A comparison that `compare_runs` would refuse (no pair) is left for it to refuse."""
        for known in attempts:
            run = RunArchive(self.runs_dir, known.run_id)
            path = run.latest_report_path()
            if path is not None:
                self._comparisons.get(
                    ("attempts", run.path), _signature(path.parent / VERDICTS), _given(known)
                )
        if comparison is None or (comparison.overall.pairs == 0 and not comparison.inconclusive):
            return
        run, baseline = (
            RunArchive(self.runs_dir, r) for r in (comparison.run_id, comparison.baseline_id)
        )
        paths = [run.latest_report_path(), baseline.latest_report_path()]
        if paths[0] is None or paths[1] is None:
            return
        self._comparisons.get(
            ("compare", run.path, baseline.path),
            _signature(*(path.parent / VERDICTS for path in paths if path is not None)),
            _given(comparison),
        )
        self._previous[run.run_id] = baseline

    def attempts(self, run: RunArchive) -> RunAttempts:
        """The attempts of the run's latest scoring as a comparison pairs them.

        Raises:
            ProjectError: the run has no scoring.
        """
        path = run.latest_report_path()
        if path is None:
            raise ProjectError(f"run {run.run_id!r} has no scoring yet")
        return self._comparisons.get(
            ("attempts", run.path), _signature(path.parent / VERDICTS), lambda: read_attempts(run)
        )

    @property
    def probing_path(self) -> Path:
        """Where `probe-judge` saves the project's last probing (`probes_file`)."""
        state = ProjectPaths(self.loaded.path, self.runs_dir).state  # beside project.yaml for S3
        return probes_file(state, self.project)

    def probing(self) -> SavedProbing | None:
        """The project's last probing, read again when the file changes; None before the
        first.

        Raises:
            ProjectError: the file is not a probing, or of another project.
        """
        path = self.probing_path
        saved = self._memo.get(("probing", path), _signature(path), lambda: read_probing(path))
        if saved is not None and saved.project != self.project:
            raise ProjectError(f"{path}: a probing of project {saved.project!r}, not this one")
        return saved

    def memo(self, key: Hashable, signature: tuple[object, ...], build: Callable[[], T]) -> T:
        """`build()` once per `signature` of what it reads (the plots of the runs page)."""
        return self._memo.get(key, signature, build)
