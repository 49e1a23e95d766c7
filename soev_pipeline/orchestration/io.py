"""The IO manager over the run archive: Dagster's storage for evidence, verdicts and report.

Evidence and verdicts are streamed to the archive by their steps as each attempt finishes,
so handing them over holds only a reference; loading them gives the archive back, which
is why a rescore reads archived evidence and never calls the system under test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.report import read_report, write_report
from soev_pipeline.run.results import Report


@dataclass(frozen=True)
class EvidenceRef:
    """The evidence of a run, as the `attempt` op hands it on."""

    run_id: str


@dataclass(frozen=True)
class ScoringRef:
    """One scoring of a run, as the `grade` op hands it on."""

    run_id: str
    scoring: str


class RunArchiveIOManager(dg.IOManager):
    """Reads and writes `runs/<run_id>/` for the run-partitioned assets.

    It takes the runs folder of the project resource, so there is one setting for it.
    """

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self._written: dict[tuple[str, str], str] = {}
        """The scoring each Dagster run's `grade` step wrote, by (Dagster run, partition):
        the `aggregate` step of that run reads that scoring, not whichever is the latest."""

    def _archive(self, partition_key: str) -> RunArchive:
        return RunArchive(self.runs_dir, partition_key)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        archive = self._archive(context.partition_key)
        if isinstance(obj, EvidenceRef):
            if not archive.evidence_path.exists():
                raise ProjectError(f"{archive.evidence_path}: the attempt step wrote no evidence")
        elif isinstance(obj, ScoringRef):
            if not (archive.scorings_path / obj.scoring).is_dir():
                raise ProjectError(f"{archive.path}: scoring {obj.scoring} was not written")
            self._written[(context.run_id, context.partition_key)] = obj.scoring
        elif isinstance(obj, Report):
            write_report(archive.scorings_path / obj.scoring.scoring, obj)
        else:
            raise TypeError(f"cannot store {type(obj).__name__} in the run archive")

    def load_input(self, context: dg.InputContext) -> Any:
        archive = self._archive(context.partition_key)
        upstream = context.upstream_output
        name = upstream.asset_key.path[-1] if upstream and upstream.asset_key else ""
        if not archive.exists():
            raise ProjectError(f"{archive.path}: no archived run {archive.run_id!r}")
        if name == "evidence":
            return archive
        if name == "verdicts":
            if upstream is not None:
                written = self._written.pop((upstream.run_id, context.partition_key), None)
                if written is not None:
                    return archive.scorings_path / written
            scorings = archive.scorings()
            if not scorings:
                raise ProjectError(f"{archive.path}: run {archive.run_id!r} has no scoring")
            return scorings[-1]
        if name == "report":
            return read_report(archive)
        raise TypeError(f"the run archive holds no asset {name!r}")
