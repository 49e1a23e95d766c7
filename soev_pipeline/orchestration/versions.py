"""The code versions of the assets, and the dependencies their provenance names.

Dagster records an asset's code version, and the data versions of its dependencies, with
every materialization that a run makes of it, and marks a partition stale when either
changed since. What a judge prompt or a label file holds is not code: it changes without
a reload, so it reaches Dagster as the data version of the assets
`judge_prompts` and `labels` (`assets`, `calibration`). The code versions below change
only with the code: `verdicts` with the versions of the criterion kinds the project uses.

`record` writes the same code versions and provenance on what it records for a run that
no asset job made (the CLI, `new_evaluation`), so a run is stale or fresh in the same way
whichever front end made it.
"""

from __future__ import annotations

from collections.abc import Mapping

from soev_pipeline.core.canonical import digest
from soev_pipeline.project import LoadedProject

FIXED = "1"
"""The code version of the assets whose making does not depend on a project's kinds: it
changes when the archive's format or the report's figures change."""

DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "suites": (),
    "judge_prompts": (),
    "labels": (),
    "evidence": ("suites",),
    "verdicts": ("evidence", "judge_prompts"),
    "report": ("verdicts", "judge_prompts"),
    "judge_calibration": ("judge_prompts", "labels"),
    "judge_probes": ("judge_prompts",),
}
"""Each asset's dependencies, by plain name. `report` depends on `judge_prompts` itself:
Dagster does not pass a stale parent's staleness on to its children, and a report built
from verdicts graded with old prompts is as outdated as they are."""


def grading_version(loaded: LoadedProject) -> str:
    """The code version of `verdicts`: a short hash of the versions of the criterion kinds
    that the project's cases use (a kind's version changes whenever what it decides does)."""
    kinds = sorted({spec.kind for case in loaded.cases() for spec in case.criteria})
    return digest({kind: loaded.registry.version(kind) for kind in kinds})[:12]


def code_version(loaded: LoadedProject, name: str) -> str:
    """The code version of the asset called `name`."""
    return grading_version(loaded) if name == "verdicts" else FIXED
