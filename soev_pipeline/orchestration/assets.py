"""The assets of an evaluation and their ops: load, attempt, grade and aggregate.

Each asset calls one function of `soev_pipeline.run.service`. Metadata shows aggregates
and dev case ids only; test cases never appear here.
"""

from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal

import dagster as dg

from soev_pipeline.core.models import STATUSES
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.results import Comparison, GroupFigures, PairedGroup, Report, StatusCounts
from soev_pipeline.run.service import (
    RunSelection,
    aggregate_run,
    attempt_selected,
    grade_run,
)
from soev_pipeline.runtime import RuntimeSession

from .config import EvaluateConfig, GradeConfig, ReportConfig
from .io import EvidenceRef, ScoringRef
from .names import PLAIN, Names
from .resources import Progress, SessionHolder, SoevProject

RUN_ASSETS_IO = "run_archive_io_manager"
NO_SIGNIFICANT_REGRESSION = "no_significant_regression"


class Resources:
    """The resources of one project's ops, by the project's own keys (see `Names`)."""

    def __init__(self, context: dg.AssetExecutionContext, names: Names) -> None:
        resources = context.resources
        self.project: SoevProject = getattr(resources, names("project"))
        self.runtime: SessionHolder = resources.runtime
        self.progress: Progress = resources.progress


def resource_keys(names: Names, *, runtime: bool = True) -> set[str]:
    keys = {names("project")}
    return keys | {"runtime", "progress"} if runtime else keys


def build_suites_asset(suite_names: Sequence[str], names: Names = PLAIN) -> dg.AssetsDefinition:
    """The `suites` asset (op `load`), partitioned by the project's suite names."""

    partitions = dg.StaticPartitionsDefinition(list(suite_names))

    @dg.multi_asset(
        name=names("load"),
        specs=[
            dg.AssetSpec(
                names.key("suites"),
                kinds={"yaml"},
                group_name=names.group,
                description="The validated cases of one suite, and their digests.",
            )
        ],
        partitions_def=partitions,
        required_resource_keys=resource_keys(names, runtime=False),
    )
    def load(context: dg.AssetExecutionContext) -> dg.MaterializeResult[None]:
        project: SoevProject = getattr(context.resources, names("project"))
        loaded = project.loaded
        suite = loaded.suite(context.partition_key)
        dev = [case for case in suite.cases if case.split == "dev"]
        test = len(suite.cases) - len(dev)
        return dg.MaterializeResult(
            asset_key=names.key("suites"),
            metadata={
                "cases": len(suite.cases),
                "dev_cases": len(dev),
                "test_cases": test,
                "digest": suite.digest(),
                "files": dg.MetadataValue.md(
                    "\n".join(f"- `{file.relative_to(loaded.directory)}`" for file in suite.files)
                ),
                "dev_case_ids": dg.MetadataValue.md(
                    "\n".join(f"- `{case.id}`" for case in dev) or "none"
                ),
            },
            data_version=dg.DataVersion(suite.digest()[:16]),
        )

    return load


def build_judge_prompts_asset(names: Names = PLAIN) -> dg.AssetsDefinition:
    """The `judge_prompts` asset (op `load_prompts`)."""

    @dg.multi_asset(
        name=names("load_prompts"),
        specs=[
            dg.AssetSpec(
                names.key("judge_prompts"),
                kinds={"markdown"},
                group_name=names.group,
                description="The judge prompts and rubrics the project uses, with their SHA-256.",
            )
        ],
        required_resource_keys=resource_keys(names, runtime=False),
    )
    def judge_prompts(context: dg.AssetExecutionContext) -> dg.MaterializeResult[None]:
        """Record the hashes of the judge prompts and rubrics; their digest is the data
        version."""
        project: SoevProject = getattr(context.resources, names("project"))
        shas = project.loaded.prompt_shas
        version = project.loaded.prompts_version
        return dg.MaterializeResult(
            asset_key=names.key("judge_prompts"),
            metadata={"prompts_version": version, **{name: sha for name, sha in shas.items()}},
            data_version=dg.DataVersion(version),
        )

    return judge_prompts


def build_evidence_asset(names: Names = PLAIN) -> dg.AssetsDefinition:
    """The `evidence` asset (op `attempt`), partitioned by run id."""

    @dg.multi_asset(
        name=names("attempt"),
        outs={
            "evidence": dg.AssetOut(
                key=names.key("evidence"),
                io_manager_key=names(RUN_ASSETS_IO),
                group_name=names.group,
                description="Every attempt's turns, replies, citations, usage and failures.",
            )
        },
        partitions_def=names.runs_partitions,
        deps=[dg.AssetDep(names.key("suites"), partition_mapping=dg.AllPartitionMapping())],
        required_resource_keys=resource_keys(names),
    )
    def attempt(
        context: dg.AssetExecutionContext, config: EvaluateConfig
    ) -> dg.Output[EvidenceRef]:
        resources = Resources(context, names)
        return _attempt(context, config, resources, names)

    return attempt


def _attempt(
    context: dg.AssetExecutionContext, config: EvaluateConfig, resources: Resources, names: Names
) -> dg.Output[EvidenceRef]:
    project, runtime, progress = resources.project, resources.runtime, resources.progress
    run_id = context.partition_key
    loaded = project.loaded
    head_start = project.head_starts.pop(run_id, None)
    if head_start is not None:
        attempted = head_start.result()
    else:
        selection = RunSelection(tuple(config.suites), config.split.split, config.k)
        name = config.runtime or loaded.project.runtime
        session = runtime.session
        bindings = session.run(
            session.bindings(loaded, name, _operation(context, names), project.state)
        )
        archive = RunArchive(project.runs, run_id)
        resume = archive.exists() if config.resume is None else config.resume
        if resume:
            archive.manifest()
        with archive.locked("resume" if resume else "run"):
            attempted = session.run(
                attempt_selected(
                    loaded,
                    project.runs,
                    run_id,
                    selection,
                    bindings,
                    resume=resume,
                    runtime=name,
                    progress=progress,
                )
            )
    prepared, stats = attempted.prepared, attempted.stats
    manifest = prepared.manifest
    return dg.Output(
        EvidenceRef(run_id),
        output_name="evidence",
        metadata={
            "attempts": len(manifest.cases) * manifest.k,
            "run_now": stats.finished,
            "resumed_from": prepared.already_done,
            "failed_attempts": stats.failed,
            "suites": ", ".join(manifest.suites),
            "split": manifest.split or "dev+test",
            "k": manifest.k,
            "archive": dg.MetadataValue.path(str(prepared.archive.path)),
        },
    )


def build_verdicts_asset(version: str, names: Names = PLAIN) -> dg.AssetsDefinition:
    """The `verdicts` asset (op `grade`); its code version is the digest of the prompt hashes."""

    @dg.multi_asset(
        name=names("grade"),
        outs={
            "verdicts": dg.AssetOut(
                key=names.key("verdicts"),
                io_manager_key=names(RUN_ASSETS_IO),
                code_version=version,
                group_name=names.group,
                description="One verdict per attempt and criterion, with each attempt's score.",
            )
        },
        ins={"evidence": dg.AssetIn(names.key("evidence"))},
        partitions_def=names.runs_partitions,
        deps=[names.key("judge_prompts")],
        required_resource_keys=resource_keys(names),
    )
    def grade(
        context: dg.AssetExecutionContext, config: GradeConfig, evidence: RunArchive
    ) -> dg.Output[ScoringRef]:
        resources = Resources(context, names)
        project, runtime, progress = resources.project, resources.runtime, resources.progress
        loaded = project.loaded
        session = runtime.session

        async def score() -> Any:
            name = config.runtime or loaded.project.runtime
            bindings = await session.bindings(
                loaded, name, _operation(context, names), project.state, offline=config.offline
            )
            progress.phase("grading")
            return await grade_run(
                loaded,
                evidence,
                judge=bindings.judge,
                language_detector=bindings.language_detector,
                offline=config.offline,
                progress=progress.graded,
            )

        with evidence.locked("rescore"):
            scoring_dir, summary = session.run(score())
        metadata: dict[str, Any] = {
            "scoring": summary.scoring,
            "attempts": summary.attempts,
            "skipped_attempts": summary.skipped,
            **{f"verdicts_{status}": count for status, count in summary.statuses.items()},
            "prompts_version": version,
            "offline": summary.offline,
            "scoring_path": dg.MetadataValue.path(str(scoring_dir)),
        }
        if summary.judge:
            metadata.update({f"judge_{key}": value for key, value in summary.judge.items()})
        ref = ScoringRef(evidence.run_id, scoring_dir.name)
        return dg.Output(ref, output_name="verdicts", metadata=metadata)

    return grade


def build_report_asset(version: str, names: Names = PLAIN) -> dg.AssetsDefinition:
    """The `report` asset (op `aggregate`); its code version is that of `verdicts`, so a
    report made from verdicts graded with outdated prompts is stale as well."""

    @dg.multi_asset(
        name=names("aggregate"),
        outs={
            "report": dg.AssetOut(
                key=names.key("report"),
                io_manager_key=names(RUN_ASSETS_IO),
                code_version=version,
                group_name=names.group,
                description="Aggregates per suite, split and criterion; pass@k; the previous run's "
                "deltas.",
            )
        },
        ins={"verdicts": dg.AssetIn(names.key("verdicts"))},
        partitions_def=names.runs_partitions,
        required_resource_keys=resource_keys(names),
        check_specs=[
            dg.AssetCheckSpec(
                NO_SIGNIFICANT_REGRESSION,
                asset=names.key("report"),
                description=(
                    "Fails (severity ERROR) when the run, its whole, a suite or a split, is "
                    "significantly worse than the previous run: paired sign test, Holm-adjusted "
                    "over the suites, alpha 0.05."
                ),
            )
        ],
    )
    def report(
        context: dg.AssetExecutionContext, config: ReportConfig, verdicts: Path
    ) -> Iterator[dg.Output[Report] | dg.AssetCheckResult]:
        """Aggregate the latest scoring into the run's report; an evaluate run also publishes it.

        The report's metadata carries every pass rate with its 95 % interval, so the asset's
        plots show the band over the run partitions; the check `no_significant_regression`
        compares it with the previous run.
        """
        resources = Resources(context, names)
        project, runtime = resources.project, resources.runtime
        archive = RunArchive(project.runs, verdicts.parent.parent.name)
        with archive.locked("rescore"):
            built = aggregate_run(archive, verdicts, write=False)
        if _attempted_in_this_run(context, names):
            session = runtime.session
            session.run(_publish(session, project, config.runtime, archive, built))
        metadata: dict[str, Any] = {}
        groups = {
            "overall": built.overall,
            **built.suites,
            **{f"split/{name}": figures for name, figures in built.splits.items()},
        }
        for name, figures in groups.items():
            metadata.update(_rate_metadata(name, figures))
        totals = dict.fromkeys(STATUSES, 0)
        for counts in built.criteria.values():
            for status, count in counts.as_dict().items():
                totals[status] += count
        metadata.update({f"verdicts/{status}": count for status, count in totals.items()})
        metadata["criteria"] = dg.MetadataValue.md(_criteria_table(built.criteria))
        metadata["prompts"] = dg.MetadataValue.json(built.prompts)
        metadata["archive"] = dg.MetadataValue.path(str(archive.path))
        previous = built.previous
        if previous is not None:
            metadata["previous_run"] = previous.baseline_id
            metadata["delta/overall"] = _rounded(previous.overall.delta)
            metadata["p_value/overall"] = _rounded(previous.overall.p_value)
            metadata["regressions"] = len(previous.regressions)
            metadata["improvements"] = len(previous.improvements)
        yield dg.Output(built, output_name="report", metadata=metadata)
        yield regression_check(previous, names)

    return report


def _rounded(value: float | None) -> float:
    """A figure for the UI: rounded to 4 decimals (NaN when there is none, so plots skip it)."""
    return float("nan") if value is None else round(value, 4)


def _rate_metadata(name: str, figures: GroupFigures) -> dict[str, float]:
    low, high = figures.ci95 if figures.ci95 is not None else (None, None)
    return {
        f"pass_rate/{name}": _rounded(figures.pass_rate),
        f"ci95_low/{name}": _rounded(low),
        f"ci95_high/{name}": _rounded(high),
    }


def regression_check(previous: Comparison | None, names: Names = PLAIN) -> dg.AssetCheckResult:
    """The `no_significant_regression` result of a report's comparison with the previous run."""
    if previous is None:
        return dg.AssetCheckResult(
            asset_key=names.key("report"),
            check_name=NO_SIGNIFICANT_REGRESSION,
            passed=True,
            description="no previous run of this project to compare with",
        )
    groups = {"overall": previous.overall, **previous.suites}
    groups.update({f"split {name}": group for name, group in previous.splits.items()})
    regressed = [name for name, group in groups.items() if group.verdict == "regressed"]
    return dg.AssetCheckResult(
        asset_key=names.key("report"),
        check_name=NO_SIGNIFICANT_REGRESSION,
        passed=not regressed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"regressed against run {previous.baseline_id}: {', '.join(regressed)}"
            if regressed
            else f"no group regressed significantly against run {previous.baseline_id}"
        ),
        metadata={
            "baseline": previous.baseline_id,
            "regressed_groups": len(regressed),
            "delta": _rounded(previous.overall.delta),
            "p_value": _rounded(previous.overall.p_value),
            "comparison": dg.MetadataValue.md(_comparison_table(groups)),
        },
    )


def _comparison_table(groups: Mapping[str, PairedGroup]) -> str:
    lines = [
        "| group | pairs | baseline | now | Δ | 95% CI | p | verdict |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for name, group in groups.items():
        p = group.p_holm if group.p_holm is not None else group.p_value
        ci = "—" if group.ci95 is None else f"{group.ci95[0]:+.3f} to {group.ci95[1]:+.3f}"
        lines.append(
            f"| {name} | {group.pairs} | {_rounded(group.baseline_pass_rate)} "
            f"| {_rounded(group.pass_rate)} | {_rounded(group.delta)} | {ci} | {p:.4f} "
            f"| {group.verdict} |"
        )
    return "\n".join(lines)


def _attempted_in_this_run(context: dg.AssetExecutionContext, names: Names) -> bool:
    """Whether this Dagster run also made the evidence: then the report is a new run's,
    and goes to the runtime's tracker, whichever job or backfill ran it."""
    selection: AbstractSet[dg.AssetKey] | None = context.run.asset_selection
    if not selection:  # the whole job
        return str(context.job_name) != names("rescore")
    return names.key("evidence") in selection


async def _publish(
    session: RuntimeSession,
    project: SoevProject,
    name: str | None,
    archive: RunArchive,
    built: Report,
) -> None:
    """Give the public report to the runtime's tracker, when it has one."""
    loaded = project.loaded
    bindings = await session.bindings(loaded, name or loaded.project.runtime, "run", project.state)
    if bindings.tracker is not None:
        manifest = archive.manifest().model_dump(mode="json")
        public = {key: value for key, value in manifest.items() if key != "cases"}
        await bindings.tracker.publish(manifest=public, report=built.model_dump(mode="json"))


def _operation(context: dg.AssetExecutionContext, names: Names) -> Literal["run", "rescore"]:
    """`rescore` in the rescore job; `run` wherever evidence may be made."""
    return "rescore" if context.job_name == names("rescore") else "run"


def _criteria_table(criteria: Mapping[str, StatusCounts]) -> str:
    lines = ["| criterion | pass | fail | error | n/a |", "| --- | ---: | ---: | ---: | ---: |"]
    for kind, counts in criteria.items():
        lines.append(
            f"| `{kind}` | {counts.pass_} | {counts.fail} | {counts.error} "
            f"| {counts.not_applicable} |"
        )
    return "\n".join(lines)
