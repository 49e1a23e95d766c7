"""The assets of an evaluation and their ops: load, attempt, grade and aggregate.

Each op is a module-level function over typed resources that calls one step of
`soev_pipeline.run.service` (the steps `soev_pipeline.api` runs for the CLI, in the same
order, each taking the run's lock itself) and returns its metadata (`metadata`). `build_assets`
gives them the keys and partitions of one project. The archive holds the data; an asset's
materialization holds its metadata, so no IO manager stores anything.
"""

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import dagster as dg

from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.progress import Progress
from soev_pipeline.run.service import (
    RunSelection,
    Scoring,
    aggregate,
    attempt,
    grade,
    latest_scoring,
    publish,
)
from soev_pipeline.view import write_html_report

from . import metadata
from .config import EvaluateConfig, GradeConfig, ReportConfig
from .keys import ProjectKeys
from .resources import ProjectResource, RuntimeResource
from .steps import one_line_errors

RESCORE_JOB = "rescore"


def load(context: dg.AssetExecutionContext, project: ProjectResource) -> dg.MaterializeResult[None]:
    """Record one suite: its counts, digest and files (its data version is the digest)."""
    suite = project.loaded.suite(context.partition_key)
    return dg.MaterializeResult(
        metadata=metadata.suite(project.loaded, suite),
        data_version=dg.DataVersion(metadata.suite_version(suite)),
    )


def load_prompts(project: ProjectResource) -> dg.MaterializeResult[None]:
    """Record the hashes of the judge prompts and rubrics; their digest is the data version."""
    loaded = project.loaded
    return dg.MaterializeResult(
        metadata=metadata.prompts(loaded), data_version=dg.DataVersion(loaded.prompts_version)
    )


class _LogProgress(Progress):
    """A step's progress in the run's log: its phases, not every attempt."""

    def __init__(self, context: dg.AssetExecutionContext) -> None:
        self._log = context.log

    def phase(self, text: str) -> None:
        self._log.info(text)


def _operation(context: dg.AssetExecutionContext) -> Literal["run", "rescore"]:
    """`rescore` in the rescore job; `run` wherever evidence may be made."""
    return "rescore" if context.job_name == RESCORE_JOB else "run"


def attempt_cases(
    context: dg.AssetExecutionContext,
    config: EvaluateConfig,
    project: ProjectResource,
    runtime: RuntimeResource,
) -> dg.MaterializeResult[None]:
    """Attempt every selected case k times and archive the evidence (resuming a run that is
    archived already, unless the config says otherwise)."""
    loaded, paths, session = project.loaded, project.paths, runtime.session
    name = config.runtime or loaded.project.runtime
    selection = RunSelection(tuple(config.suites), config.split.split, config.k)
    with one_line_errors(paths.project_file):
        bindings = session.run(session.bindings(loaded, name, _operation(context), paths.state))
        attempted = session.run(
            attempt(
                loaded,
                paths.runs,
                context.partition_key,
                selection,
                bindings,
                resume=config.resume,
                runtime=name,
                progress=_LogProgress(context),
            )
        )
    return dg.MaterializeResult(metadata=metadata.evidence(attempted))


def grade_evidence(
    context: dg.AssetExecutionContext,
    config: GradeConfig,
    project: ProjectResource,
    runtime: RuntimeResource,
) -> dg.MaterializeResult[None]:
    """Grade the run's archived evidence with the current criteria and prompts."""
    loaded, paths, session = project.loaded, project.paths, runtime.session
    name = config.runtime or loaded.project.runtime
    archive = RunArchive(paths.runs, context.partition_key)

    async def graded() -> Scoring:
        bindings = await session.bindings(
            loaded, name, _operation(context), paths.state, offline=config.offline
        )
        return await grade(
            loaded,
            archive,
            judge=bindings.judge,
            language_detector=bindings.language_detector,
            offline=config.offline,
            progress=_LogProgress(context),
        )

    with one_line_errors(paths.project_file):
        scoring = session.run(graded())
    return dg.MaterializeResult(metadata=metadata.verdicts(scoring, loaded.prompts_version))


def aggregate_verdicts(
    context: dg.AssetExecutionContext,
    config: ReportConfig,
    project: ProjectResource,
    runtime: RuntimeResource,
) -> Iterator[dg.MaterializeResult[None] | dg.AssetCheckResult]:
    """Aggregate the run's latest scoring into its report, and write the report as one
    self-contained HTML file beside it (its metadata names it); a new run's report also
    goes to the runtime's tracker. The check `no_significant_regression` compares it with
    the previous run."""
    loaded, paths, session = project.loaded, project.paths, runtime.session
    archive = RunArchive(paths.runs, context.partition_key)
    name = config.runtime or loaded.project.runtime

    async def published() -> None:
        bindings = await session.bindings(loaded, name, "run", paths.state)
        await publish(bindings, archive, report)

    with one_line_errors(paths.project_file):
        scoring = latest_scoring(archive)
        report = aggregate(archive, scoring)
        write_html_report(loaded, archive, scoring / metadata.HTML_REPORT)
        if _attempted_in_this_run(context):
            session.run(published())
    yield dg.MaterializeResult(metadata=metadata.report(report, archive))
    yield metadata.regression(report).result()


def _attempted_in_this_run(context: dg.AssetExecutionContext) -> bool:
    """Whether this Dagster run also made the evidence: then the report is a new run's,
    and goes to the runtime's tracker, whichever job or backfill ran it."""
    selection = context.run.asset_selection
    if not selection:  # the whole job
        return str(context.job_name) != RESCORE_JOB
    evidence = dg.AssetKey([*context.asset_key.path[:-1], "evidence"])
    return evidence in selection


def build_assets(
    keys: ProjectKeys, suites: Sequence[str], prompts_version: str
) -> list[dg.AssetsDefinition]:
    """The five assets of a project: `suites` partitioned by its suite names, the run assets
    by its run ids; the code version of `verdicts` and `report` is the prompts version, so
    a changed prompt shows the runs graded with the old one as stale."""

    def spec(name: str, description: str, **extra: Any) -> dg.AssetSpec:
        return dg.AssetSpec(
            keys.asset(name), group_name=keys.group, description=description, **extra
        )

    def op(function: Any, name: str, specs: list[dg.AssetSpec], **extra: Any) -> Any:
        return dg.multi_asset(name=name, specs=specs, **extra)(function)

    runs = keys.runs
    return [
        op(
            load,
            "load",
            [
                spec(
                    "suites", "The validated cases of one suite, and their digests.", kinds={"yaml"}
                )
            ],
            partitions_def=dg.StaticPartitionsDefinition(list(suites)),
        ),
        op(
            load_prompts,
            "load_prompts",
            [
                spec(
                    "judge_prompts",
                    "The judge prompts and rubrics the project uses, with their SHA-256.",
                    kinds={"markdown"},
                )
            ],
        ),
        op(
            attempt_cases,
            "attempt",
            [
                spec(
                    "evidence",
                    "Every attempt's turns, replies, citations, usage and failures.",
                    deps=[
                        dg.AssetDep(
                            keys.asset("suites"), partition_mapping=dg.AllPartitionMapping()
                        )
                    ],
                )
            ],
            partitions_def=runs,
        ),
        op(
            grade_evidence,
            "grade",
            [
                spec(
                    "verdicts",
                    "One verdict per attempt and criterion, with each attempt's score.",
                    deps=[keys.asset("evidence"), keys.asset("judge_prompts")],
                    code_version=prompts_version,
                )
            ],
            partitions_def=runs,
        ),
        op(
            aggregate_verdicts,
            "aggregate",
            [
                spec(
                    "report",
                    "Aggregates per suite, split and criterion; pass@k; the previous run's deltas.",
                    deps=[keys.asset("verdicts")],
                    code_version=prompts_version,
                )
            ],
            partitions_def=runs,
            check_specs=[
                dg.AssetCheckSpec(
                    metadata.NO_SIGNIFICANT_REGRESSION,
                    asset=keys.asset("report"),
                    description=(
                        "Fails (severity ERROR) when the run, its whole, a suite or a split, is "
                        "significantly worse than the previous run (paired sign test, Holm "
                        "over every group with a changed pair, alpha 0.05); warns when too "
                        "many attempts did not run to decide (inconclusive)."
                    ),
                )
            ],
        ),
    ]
