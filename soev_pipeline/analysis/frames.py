"""The runs of a project as pandas data frames (docs/analysis.md).

Each function reads only the runs it is given (all of the project's by default), each at
its latest scoring that has a report (every such scoring with `all_scorings=True`), and
only the lines of the suites it is given. The test split is sealed here as everywhere:
no row holds a test case (a case that a run graded as a test case, or that the project
holds in its test split now); `runs_frame` counts them in its aggregates alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from soev_pipeline.calibration import criterion_name, label_files, read_project_labels
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import SPLITS, STATUSES
from soev_pipeline.core.project import Project
from soev_pipeline.project import LoadedProject, ProjectPaths, load, read_project, read_seal
from soev_pipeline.project.paths import RunsDir
from soev_pipeline.run.archive import RunArchive, check_run_id, list_runs
from soev_pipeline.run.manifest import Manifest, check_same_project
from soev_pipeline.run.scoring import AttemptScore, case_figures

from .columns import ATTEMPTS, CASES, LABELS, RUNS, VERDICTS, Column
from .parquet import Written, check_folder, write_tables
from .reading import (
    PER_SCORING,
    Columns,
    Filters,
    Scored,
    build_frame,
    read_attempts,
    read_verdicts,
    scorings_of,
    uncollected,
)

ProjectLike = str | Path | LoadedProject


@dataclass(frozen=True)
class Selection:
    """The scorings to read from one project's archive, and what to pass over in them."""

    paths: ProjectPaths
    project: Project
    scorings: tuple[Scored, ...]
    filters: Filters

    @classmethod
    def of(
        cls,
        project: ProjectLike,
        *,
        runs: Sequence[str] | None = None,
        suites: Collection[str] | None = None,
        all_scorings: bool = False,
        runs_dir: str | Path | None = None,
    ) -> Selection:
        """Read project.yaml and find the scorings to read.

        The project's suites are not loaded (for a large project that takes longer than
        the reading): a run records each case's split, and the seal names the test cases
        of the project now. A `LoadedProject` gives its test cases itself.

        Raises:
            ProjectError: project.yaml or the seal does not read; a named run does not
                exist, belongs to another project or has no report yet; a named suite is
                not the project's.
        """
        if isinstance(project, LoadedProject):
            paths = ProjectPaths.of(project.path, runs_dir)
            definition = project.project
            hidden = frozenset(case.id for case in project.cases() if case.split == "test")
        else:
            paths = ProjectPaths.of(project, runs_dir)
            definition = read_project(paths.project_file)
            hidden = frozenset(read_seal(paths.directory) or ())
        name = definition.name
        known = [entry.name for entry in definition.suites]
        if suites is not None:
            unknown = sorted(set(suites) - set(known))
            if unknown:
                raise ProjectError(
                    f"{paths.project_file}: project {name!r} has no suite "
                    f"{', '.join(map(repr, unknown))} (its suites: {', '.join(known)})"
                )
        scorings: list[Scored] = []
        for archive, manifest in _runs(paths.runs, name, runs):
            if suites is not None and not set(manifest.suites) & set(suites):
                continue
            found = scorings_of(archive, manifest, every=all_scorings)
            if not found and runs is not None:
                raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no report yet")
            scorings += found
        chosen = frozenset(suites) if suites is not None else None
        return cls(paths, definition, tuple(scorings), Filters(chosen, hidden))

    @property
    def suite_names(self) -> list[str]:
        """The suites in the order of the project, then those only older runs had."""
        names = [entry.name for entry in self.project.suites]
        for scored in self.scorings:
            names += [name for name in scored.manifest.suites if name not in names]
        return names


def _runs(
    runs_dir: RunsDir, project: str, wanted: Sequence[str] | None
) -> Iterator[tuple[RunArchive, Manifest]]:
    """The project's runs, oldest first, or the `wanted` ones in their order."""
    if wanted is None:
        for archive, manifest in list_runs(runs_dir):
            if manifest.project == project:
                yield archive, manifest
        return
    for run_id in dict.fromkeys(wanted):
        archive = RunArchive(runs_dir, check_run_id(run_id))
        manifest = archive.manifest()
        check_same_project(manifest, project)
        yield archive, manifest


def _columns(schema: Sequence[Column], *, repeated: bool = True) -> Columns:
    """Empty columns of `schema`; with `repeated`, those of `PER_SCORING` come from the
    scoring of each row."""
    names = [column.name for column in schema]
    return Columns(names, frozenset(PER_SCORING) & set(names) if repeated else frozenset())


def _categories(selection: Selection) -> dict[str, Sequence[str]]:
    return {"suite": selection.suite_names, "split": SPLITS, "status": STATUSES}


def runs_table(selection: Selection) -> pd.DataFrame:
    """The `runs` table of a selection: one row per scoring, from its report.json."""
    columns = _columns(RUNS, repeated=False)
    v = columns.values
    for scored in selection.scorings:
        report = scored.report()
        manifest, overall = scored.manifest, report.overall
        low, high = overall.ci95 if overall.ci95 is not None else (None, None)
        dev, test = report.splits.get("dev"), report.splits.get("test")
        totals = {status: 0 for status in STATUSES}
        for counts in report.criteria.values():
            for status, count in counts.as_dict().items():
                totals[status] += count
        row = {
            "run_id": scored.run_id,
            "project": manifest.project,
            "created_at": manifest.created_at,
            "suites": ",".join(manifest.suites),
            "split": manifest.split,
            "k": manifest.k,
            "scoring": scored.number,
            "scored_at": scored.summary.created_at,
            "prompts_version": scored.prompts_version,
            "offline": scored.summary.offline,
            "cases": overall.cases,
            "dev_cases": dev.cases if dev is not None else 0,
            "test_cases": test.cases if test is not None else 0,
            "attempts": overall.attempts,
            "passed_attempts": overall.passed_attempts,
            "unrun_attempts": report.unrun.attempts,
            "expected_attempts": report.expected_attempts,
            "pass_rate": overall.pass_rate,
            "pass_rate_ci95_low": low,
            "pass_rate_ci95_high": high,
            "mean_score": overall.mean_score,
            "pass_at_k": overall.pass_at_k,
            "pass_all_k": overall.pass_all_k,
            "dev_pass_rate": dev.pass_rate if dev is not None else None,
            "inconclusive": report.inconclusive,
            "verdicts": sum(totals.values()),
            "failed_verdicts": totals["fail"],
            "error_verdicts": totals["error"],
        }
        for name, value in row.items():
            v[name].append(value)
        columns.segments.append((scored, 1))
    return build_frame(RUNS, columns, {"split": SPLITS})


def verdicts_table(selection: Selection) -> pd.DataFrame:
    """The `verdicts` table: one row per verdict of a dev attempt."""
    columns = _columns(VERDICTS)
    with uncollected():
        for scored in selection.scorings:
            read_verdicts(scored, selection.filters, columns)
        return build_frame(VERDICTS, columns, _categories(selection))


def attempts_table(selection: Selection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `attempts` and `cases` tables: one row per dev attempt, and per dev case.

    The evidence of each run is read once, for both.
    """
    attempts = _columns(ATTEMPTS)
    categories = _categories(selection)
    with uncollected():
        for scored in selection.scorings:
            read_attempts(scored, selection.filters, attempts)
        cases = _cases(attempts, categories)
        return build_frame(ATTEMPTS, attempts, categories), cases


def _cases(attempts: Columns, categories: dict[str, Sequence[str]]) -> pd.DataFrame:
    """The dev cases of each scoring, with the figures the report gives them: a planned
    attempt without a graded line was interrupted, and counts as one that did not run."""
    cases = _columns(CASES)
    v, a = cases.values, attempts.values
    start = 0
    for scored, count in attempts.segments:
        grouped: dict[str, list[int]] = defaultdict(list)
        for row in range(start, start + count):
            grouped[a["case_id"][row]].append(row)
        start += count
        for case_id, rows in grouped.items():
            numbers = {a["attempt"][row] for row in rows}
            missing = sum(1 for n in range(scored.manifest.k) if n not in numbers)
            scores = [
                AttemptScore(a["score"][row], a["passed"][row], a["unrun"][row] is None)
                for row in rows
            ] + [AttemptScore(None, False, ran=False)] * missing
            figures = case_figures(scores)
            v["case_id"].append(case_id)
            v["suite"].append(a["suite"][rows[0]])
            v["split"].append("dev")
            v["attempts"].append(figures.attempts)
            v["passed_attempts"].append(figures.passed)
            v["unrun_attempts"].append(figures.unrun)
            v["pass_rate"].append(figures.pass_rate)
            v["mean_score"].append(figures.mean_score)
            v["pass_at_k"].append(figures.pass_at_k)
            v["pass_all_k"].append(figures.pass_all_k)
        cases.segments.append((scored, len(grouped)))
    return build_frame(CASES, cases, categories)


def labels_table(loaded: LoadedProject) -> pd.DataFrame:
    """The `labels` table: the project's human labels that count (of its dev cases)."""
    columns = _columns(LABELS, repeated=False)
    v = columns.values
    for item in read_project_labels(loaded).items:
        for read in item.labels:
            label = read.label
            v["case_id"].append(label.case_id)
            v["kind"].append(label.kind)
            v["nth"].append(label.nth)
            v["criterion"].append(criterion_name(label.kind, label.nth))
            v["passed"].append(label.passed)
            v["label"].append(label.label)
            v["by"].append(label.by)
            v["at"].append(label.at)
            v["note"].append(label.note)
            v["reply"].append(label.reply)
            v["reply_sha256"].append(label.reply_sha256)
            v["file"].append(_relative(read.file, loaded.directory))
            v["line"].append(read.line)
    return build_frame(LABELS, columns)


def _relative(path: Path, directory: Path) -> str:
    return str(path.relative_to(directory)) if path.is_relative_to(directory) else str(path)


def runs_frame(
    project: ProjectLike,
    *,
    runs: Sequence[str] | None = None,
    suites: Collection[str] | None = None,
    all_scorings: bool = False,
    runs_dir: str | Path | None = None,
) -> pd.DataFrame:
    """One row per run (per scoring with `all_scorings`), with the figures of its report.

    The figures are those of the whole run, both splits (`dev_pass_rate` is the dev
    split's); `suites` keeps the runs that selected one of them.
    """
    selection = Selection.of(
        project, runs=runs, suites=suites, all_scorings=all_scorings, runs_dir=runs_dir
    )
    return runs_table(selection)


def cases_frame(
    project: ProjectLike,
    *,
    runs: Sequence[str] | None = None,
    suites: Collection[str] | None = None,
    all_scorings: bool = False,
    runs_dir: str | Path | None = None,
) -> pd.DataFrame:
    """One row per dev case of each run, with the figures the report's case list gives."""
    selection = Selection.of(
        project, runs=runs, suites=suites, all_scorings=all_scorings, runs_dir=runs_dir
    )
    return attempts_table(selection)[1]


def attempts_frame(
    project: ProjectLike,
    *,
    runs: Sequence[str] | None = None,
    suites: Collection[str] | None = None,
    all_scorings: bool = False,
    runs_dir: str | Path | None = None,
) -> pd.DataFrame:
    """One row per graded dev attempt: its pass and score, and what its evidence measures
    (reply length, citations, tokens, seconds, failures)."""
    selection = Selection.of(
        project, runs=runs, suites=suites, all_scorings=all_scorings, runs_dir=runs_dir
    )
    return attempts_table(selection)[0]


def verdicts_frame(
    project: ProjectLike,
    *,
    runs: Sequence[str] | None = None,
    suites: Collection[str] | None = None,
    all_scorings: bool = False,
    runs_dir: str | Path | None = None,
) -> pd.DataFrame:
    """One row per verdict of a graded dev attempt: its criterion, status, weight, gate,
    detail, and the judge's label and model for a judged kind."""
    selection = Selection.of(
        project, runs=runs, suites=suites, all_scorings=all_scorings, runs_dir=runs_dir
    )
    return verdicts_table(selection)


def labels_frame(project: ProjectLike) -> pd.DataFrame:
    """One row per human label of the project's label files that counts: a label of a test
    case, of a case or criterion the project no longer has, is left out, as calibration
    leaves it out."""
    if isinstance(project, LoadedProject):
        return labels_table(project)
    paths = ProjectPaths.of(project)
    return labels_table(load(paths.project_file, suite_cache=paths.suite_cache))


def export_parquet(
    project: ProjectLike,
    folder: str | Path,
    *,
    runs: Sequence[str] | None = None,
    all_scorings: bool = False,
    runs_dir: str | Path | None = None,
) -> list[Written]:
    """Write the five tables of `runs` (every run of the project when None) as Parquet
    files into `folder`: `soev-evals export RUN... --parquet DIR`.

    The folder is checked before anything is read (`parquet.check_folder`); the labels
    are read, and the project loaded for them, only when it has label files.

    Raises:
        ProjectError: what `Selection.of` and `check_folder` raise.
    """
    selection = Selection.of(project, runs=runs, all_scorings=all_scorings, runs_dir=runs_dir)
    target = check_folder(Path(folder), selection.paths)
    attempts, cases = attempts_table(selection)
    if isinstance(project, LoadedProject):
        labels = labels_table(project)
    elif label_files(selection.paths.directory, selection.project.labels):
        labels = labels_frame(selection.paths.project_file)
    else:
        labels = build_frame(LABELS, _columns(LABELS, repeated=False))
    tables = {
        "runs": runs_table(selection),
        "cases": cases,
        "attempts": attempts,
        "verdicts": verdicts_table(selection),
        "labels": labels,
    }
    return write_tables(target, tables)
