"""The assets of an evaluation: `suites`, `judge_prompts`, and `evidence`, `verdicts` and
`report` of each run.

Each is written once, with its plain key; `definitions` gives a project its keys,
partitions and code versions. The archive holds the data; a materialization holds the
metadata (`metadata`), so no IO manager stores anything.

- `suites` (op `load`), partitioned by suite name: a suite's counts, digest and files; its
  data version is its digest.
- `judge_prompts` (op `load_prompts`): the hashes of the judge prompts and rubrics as they
  are on disk; its data version is their hash. A prompt edit, once recorded (the prompts
  watch does within a tick, the CLI before it records a run), makes the verdicts and
  reports graded with the old prompts stale in Dagster's own lineage, and a rescore makes
  them fresh again: the prompts are data, not code, so no reload is needed.
- `evidence`, `verdicts` and `report`, partitioned by run id, are made by one op,
  `attempt_grade_aggregate`, which runs the steps its selection names through
  `soev_pipeline.api.execute`, the one composition that the CLI and the Python API run
  too: all three in the `evaluate` job (a new run, or the rest of one), `verdicts` and
  `report` in `rescore`, `report` alone to report the latest scoring again. Each asset's
  tag `soev/step` names its step.
"""

from collections.abc import Iterator

import dagster as dg

from soev_pipeline.api import check_steps, execute, run_sync
from soev_pipeline.run.progress import Step
from soev_pipeline.run.service import RunSelection

from . import metadata
from .config import RunConfig
from .failures import one_line_errors
from .keys import ASSET_TAG, RUNS, STEP_TAG
from .progress import LogProgress
from .record import recorded
from .resources import SoevProject
from .versions import DEPENDENCIES, FIXED

runs = dg.DynamicPartitionsDefinition(name=RUNS)
"""The run partitions; a project sharing the instance gets its own (`keys.runs_partitions`)."""
suite_names = dg.StaticPartitionsDefinition(["suite"])
"""A stand-in: `definitions` partitions `suites` by the names of the project's suites."""

STEP_OF: dict[str, Step] = {"evidence": "attempt", "verdicts": "grade", "report": "aggregate"}


def spec(name: str, step: str, description: str, **extra: object) -> dg.AssetSpec:
    """The spec of the asset `name`: its tags, its dependencies (`versions.DEPENDENCIES`)."""
    return dg.AssetSpec(
        name,
        description=description,
        deps=[
            # a run reads every suite it selects: all of their partitions
            dg.AssetDep(dep, partition_mapping=dg.AllPartitionMapping()) if dep == "suites" else dep
            for dep in DEPENDENCIES[name]
        ],
        tags={ASSET_TAG: name, STEP_TAG: step},
        **extra,  # type: ignore[arg-type]
    )


@dg.multi_asset(
    name="load",
    specs=[
        spec(
            "suites",
            "load",
            "The validated cases of one suite, and their digests.",
            kinds={"yaml"},
            code_version=FIXED,
            partitions_def=suite_names,
        )
    ],
)
def load(context: dg.AssetExecutionContext, project: SoevProject) -> dg.MaterializeResult[None]:
    """Record one suite: its counts, digest and files (its data version is the digest)."""
    loaded = project.loaded
    suite = loaded.suite(context.partition_key)
    return dg.MaterializeResult(
        metadata=metadata.suite(loaded, suite),
        data_version=dg.DataVersion(metadata.suite_version(suite)),
    )


@dg.multi_asset(
    name="load_prompts",
    specs=[
        spec(
            "judge_prompts",
            "load",
            "The judge prompts and rubrics the project uses, with their SHA-256; its data "
            "version is their hash, so a changed prompt shows the runs graded with the old "
            "one as stale.",
            kinds={"markdown"},
            code_version=FIXED,
        )
    ],
)
def load_prompts(
    context: dg.AssetExecutionContext, project: SoevProject
) -> dg.MaterializeResult[None]:
    """Record the judge prompts and rubrics as this run loaded them from disk."""
    loaded = project.loaded
    return dg.MaterializeResult(
        asset_key=context.asset_key,
        metadata=metadata.prompts(loaded),
        data_version=dg.DataVersion(loaded.prompts_version),
    )


@dg.multi_asset(
    name="attempt_grade_aggregate",
    specs=[
        spec(
            "evidence",
            "attempt",
            "Every attempt's turns, replies, citations, usage and failures.",
            code_version=FIXED,
            partitions_def=runs,
            skippable=True,
        ),
        spec(
            "verdicts",
            "grade",
            "One verdict per attempt and criterion, with each attempt's score.",
            code_version=FIXED,  # `definitions` sets the project's grading version
            partitions_def=runs,
            skippable=True,
        ),
        spec(
            "report",
            "aggregate",
            "Aggregates per suite, split and criterion; pass@k; the previous run's deltas; "
            "the self-contained HTML report.",
            code_version=FIXED,
            partitions_def=runs,
            skippable=True,
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            metadata.NO_SIGNIFICANT_REGRESSION,
            asset="report",
            description=(
                "Fails (severity ERROR) when the run, its whole, a suite or a split, is "
                "significantly worse than the previous run (paired sign test, overall first, "
                "then Holm over the other groups with a changed pair, alpha 0.05); warns when "
                "too many attempts did not run to decide, or when those that did not run could "
                "hide a regression (inconclusive)."
            ),
        )
    ],
    can_subset=True,
)
def attempt_grade_aggregate(
    context: dg.AssetExecutionContext, config: RunConfig, project: SoevProject
) -> Iterator[dg.MaterializeResult[None] | dg.AssetCheckResult]:
    """Run the steps of this run partition that the selection names, and record them."""
    keys = {key.path[-1]: key for key in context.selected_asset_keys}
    try:
        steps = check_steps([STEP_OF[name] for name in STEP_OF if name in keys])
    except ValueError:
        raise dg.Failure(
            description="select evidence, verdicts and report together, or verdicts and "
            "report (a rescore), or report alone: a run's steps follow each other",
            allow_retries=False,
        ) from None
    with one_line_errors(project.project_file):
        evaluation = run_sync(
            execute(
                project.loaded,
                context.partition_key,
                steps=steps,
                selection=RunSelection(tuple(config.suites), config.split.split, config.k),
                resume=config.resume,
                runtime=config.runtime,
                runs_dir=project.paths.runs,
                offline=config.offline,
                progress=LogProgress(context.log),
            )
        )
    for item in recorded(evaluation, project.name):
        yield dg.MaterializeResult(
            asset_key=keys[item.name],
            metadata=dict(item.metadata),
            data_version=dg.DataVersion(item.data_version),
        )
    if evaluation.report is not None:
        yield metadata.regression(evaluation.report).result(keys["report"])
