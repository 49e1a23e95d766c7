"""What the Dagster UI shows of each asset: the metadata of its materializations and checks.

`record.recorded` builds what a run records from here, for every front end, so a run shows
the same whichever way it started. Figures are rounded to 4 decimals for display (the
archive keeps full precision); only aggregates and dev case ids appear, never a test case.

Dagster's *Plots* tab draws one chart per numeric key, in the alphabetical order of the
keys, so the keys are named to put the most useful first: the run's pass rate `pass_rate`,
then each suite's and split's (`pass_rate/<suite>`, `pass_rate/split/<split>`), then the
bounds of their 95 % intervals (`pass_rate_ci95_high...`, `pass_rate_ci95_low...`), then
the verdict counts (`verdicts/<status>`), then the comparison with the previous run
(`vs_previous/...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import dagster as dg

from soev_pipeline.analysis.columns import VERDICTS
from soev_pipeline.core.models import STATUSES
from soev_pipeline.project import LoadedProject, Suite
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.results import GroupFigures, PairedGroup, Report, StatusCounts
from soev_pipeline.run.service import AttemptedRun, Scoring

VERDICTS_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn(column.name, column.type, description=column.about) for column in VERDICTS
    ]
)
"""The columns of the run's verdicts as `soev_pipeline.analysis.verdicts_frame` gives them and
`soev-evals export` writes them (docs/analysis.md#verdicts)."""
NO_SIGNIFICANT_REGRESSION = "no_significant_regression"
GRADED_WITH_CURRENT_PROMPTS = "graded_with_current_prompts"


def rounded(value: float | None) -> float:
    """A figure for the UI: rounded to 4 decimals (NaN when there is none, so plots skip it)."""
    return float("nan") if value is None else round(value, 4)


def significant(value: float | None) -> float:
    """A p-value for the UI: 3 significant digits, so a small one does not show as 0."""
    return float("nan") if value is None else float(f"{value:.3g}")


def suite(loaded: LoadedProject, suite: Suite) -> dict[str, Any]:
    """The `suites` partition of one suite: its counts, digest, files and dev case ids."""
    dev = [case for case in suite.cases if case.split == "dev"]
    return {
        "cases": len(suite.cases),
        "dev_cases": len(dev),
        "test_cases": len(suite.cases) - len(dev),
        "digest": suite.digest(),
        "files": dg.MetadataValue.md(
            "\n".join(f"- `{file.relative_to(loaded.directory)}`" for file in suite.files)
        ),
        "dev_case_ids": dg.MetadataValue.md("\n".join(f"- `{case.id}`" for case in dev) or "none"),
    }


def suite_version(suite: Suite) -> str:
    """The data version of a `suites` partition: its digest, short."""
    return suite.digest()[:16]


def prompts(loaded: LoadedProject) -> dict[str, Any]:
    """`judge_prompts`: the version over all prompts, and each prompt's SHA-256."""
    return {"prompts_version": loaded.prompts_version, **loaded.prompt_shas}


def evidence(attempted: AttemptedRun) -> dict[str, Any]:
    """`evidence`: what the attempt step ran, and where the archive is."""
    prepared, stats = attempted.prepared, attempted.stats
    manifest = prepared.manifest
    return {
        "attempts": len(manifest.cases) * manifest.k,
        "run_now": stats.finished,
        "resumed_from": prepared.already_done,
        "failed_attempts": stats.failed,
        "suites": ", ".join(manifest.suites),
        "split": manifest.split or "dev+test",
        "k": manifest.k,
        "archive": dg.MetadataValue.path(prepared.archive.location),
    }


def verdicts(scoring: Scoring, prompts_version: str) -> dict[str, Any]:
    """`verdicts`: the scoring's counts, its prompts version, and the judge's counters."""
    summary = scoring.summary
    metadata: dict[str, Any] = {
        "scoring": summary.scoring,
        "attempts": summary.attempts,
        "skipped_attempts": summary.skipped,
        **{f"verdicts_{status}": count for status, count in summary.statuses.items()},
        "prompts_version": prompts_version,
        "offline": summary.offline,
        "scoring_path": dg.MetadataValue.path(scoring.location or str(scoring.path)),
    }
    if summary.judge:
        metadata.update({f"judge_{key}": value for key, value in summary.judge.items()})
    return metadata


def report(
    built: Report, archive: RunArchive, html: Path | None, viewer: str | None
) -> dict[str, Any]:
    """`report`: every pass rate with its 95 % interval (so the plots show them over the run
    partitions), the verdict counts, the criteria, the HTML report, a link to the run's page
    in the project's viewer (at the address `viewer`, when one runs), and the comparison with
    the previous run."""
    metadata: dict[str, Any] = {}
    groups: dict[str | None, GroupFigures] = {None: built.overall}
    groups.update(built.suites)
    groups.update({f"split/{name}": figures for name, figures in built.splits.items()})
    for name, figures in groups.items():
        metadata.update(rate(name, figures))
    totals = dict.fromkeys(STATUSES, 0)
    for counts in built.criteria.values():
        for status, count in counts.as_dict().items():
            totals[status] += count
    metadata.update({f"verdicts/{status}": count for status, count in totals.items()})
    metadata.update(verdicts_table(built))
    metadata["criteria"] = dg.MetadataValue.md(criteria_table(built.criteria))
    metadata["prompts"] = dg.MetadataValue.json(built.prompts)
    metadata["archive"] = dg.MetadataValue.path(archive.location)
    if html is not None:
        inside = html.is_relative_to(archive.path)
        shown = archive.where(html.relative_to(archive.path).as_posix()) if inside else str(html)
        metadata["html_report"] = dg.MetadataValue.path(shown)
    if viewer:
        metadata["viewer"] = dg.MetadataValue.url(f"{viewer}/runs/{quote(archive.run_id)}")
    previous = built.previous
    if previous is not None:
        metadata["vs_previous/run"] = previous.baseline_id
        metadata["vs_previous/delta"] = rounded(previous.overall.delta)
        metadata["vs_previous/p_value"] = significant(previous.overall.p_value)
        metadata["vs_previous/regressions"] = len(previous.regressions)
        metadata["vs_previous/improvements"] = len(previous.improvements)
    return metadata


def verdicts_table(built: Report) -> dict[str, Any]:
    """The table the run's verdicts make (`verdicts_frame` of the run): its columns, and its
    rows, one per verdict of a dev attempt, counted from the report's case list rather than
    read again from verdicts.jsonl."""
    rows = sum(len(attempt.verdicts) for case in built.cases for attempt in case.attempts)
    return {"dagster/column_schema": VERDICTS_SCHEMA, "dagster/row_count": rows}


def rate(name: str | None, figures: GroupFigures) -> dict[str, float]:
    """A group's pass rate and the bounds of its 95 % interval: `pass_rate/<name>` and
    `pass_rate_ci95_low/<name>`, `pass_rate_ci95_high/<name>`; the whole run's are
    `pass_rate`, `pass_rate_ci95_low` and `pass_rate_ci95_high`."""
    group = f"/{name}" if name else ""
    low, high = figures.ci95 if figures.ci95 is not None else (None, None)
    return {
        f"pass_rate{group}": rounded(figures.pass_rate),
        f"pass_rate_ci95_low{group}": rounded(low),
        f"pass_rate_ci95_high{group}": rounded(high),
    }


def criteria_table(criteria: Mapping[str, StatusCounts]) -> str:
    lines = ["| criterion | pass | fail | error | n/a |", "| --- | ---: | ---: | ---: | ---: |"]
    for kind, counts in criteria.items():
        lines.append(
            f"| `{kind}` | {counts.pass_} | {counts.fail} | {counts.error} "
            f"| {counts.not_applicable} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class CheckOutcome:
    """The outcome of an asset check, for an in-run result or a reported evaluation."""

    name: str
    passed: bool
    description: str
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def result(self, asset_key: dg.AssetKey | None = None) -> dg.AssetCheckResult:
        """The check's result inside the asset's own step."""
        return dg.AssetCheckResult(
            asset_key=asset_key,
            check_name=self.name,
            passed=self.passed,
            severity=self.severity,
            description=self.description,
            metadata=dict(self.metadata),
        )

    def evaluation(self, asset_key: dg.AssetKey, partition: str | None) -> dg.AssetCheckEvaluation:
        """The check's evaluation as reported from outside a Dagster run (by the CLI)."""
        return dg.AssetCheckEvaluation(
            asset_key=asset_key,
            check_name=self.name,
            passed=self.passed,
            severity=self.severity,
            description=self.description,
            metadata=dict(self.metadata),
            partition=partition,
        )


def regression(report: Report, *, run_id: str | None = None) -> CheckOutcome:
    """`no_significant_regression` of a report: fails (ERROR) when a group regressed
    significantly against the previous run, and warns (WARN) when the gate cannot decide
    because too many attempts did not run, in the run or in its baseline, or because those
    that did not run could hide a regression (`inconclusive`:
    docs/statistics.md#two-runs-paired-differences-and-the-sign-test). `run_id` names the
    run in the metadata (where the evaluation is not the partition's own)."""
    named: dict[str, Any] = {"run": run_id} if run_id is not None else {}
    previous = report.previous
    if report.inconclusive:
        return CheckOutcome(
            NO_SIGNIFICANT_REGRESSION,
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=(
                f"inconclusive: {report.unrun.describe(report.expected_attempts)}, "
                "more than 5 %: the gate cannot decide"
            ),
            metadata={**named, "inconclusive": True, **_codes("unrun", report.unrun.codes)},
        )
    if previous is None:
        return CheckOutcome(
            NO_SIGNIFICANT_REGRESSION,
            passed=True,
            description="no previous run of this project to compare with",
            metadata=named,
        )
    groups = {"overall": previous.overall, **previous.suites}
    groups.update({f"split {name}": group for name, group in previous.splits.items()})
    table = dg.MetadataValue.md(comparison_table(groups))
    if previous.inconclusive:
        return CheckOutcome(
            NO_SIGNIFICANT_REGRESSION,
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"inconclusive: {previous.why_inconclusive()}",
            metadata={
                **named,
                "baseline": previous.baseline_id,
                "inconclusive": True,
                **_codes("unrun", previous.unrun.run.codes),
                **_codes("baseline_unrun", previous.unrun.baseline.codes),
                "comparison": table,
            },
        )
    regressed = [name for name, group in groups.items() if group.verdict == "regressed"]
    if not regressed and previous.could_hide_regression():
        return CheckOutcome(
            NO_SIGNIFICANT_REGRESSION,
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"inconclusive: {previous.why_undecided()}",
            metadata={
                **named,
                "baseline": previous.baseline_id,
                "inconclusive": True,
                "reason": "unrun_could_hide_regression",
                **_codes("unrun", previous.unrun.run.codes),
                **_codes("baseline_unrun", previous.unrun.baseline.codes),
                "comparison": table,
            },
        )
    return CheckOutcome(
        NO_SIGNIFICANT_REGRESSION,
        passed=not regressed,
        description=(
            f"regressed against run {previous.baseline_id}: {', '.join(regressed)}"
            if regressed
            else f"no group regressed significantly against run {previous.baseline_id}"
        ),
        metadata={
            **named,
            "baseline": previous.baseline_id,
            "inconclusive": False,
            "regressed_groups": len(regressed),
            "delta": rounded(previous.overall.delta),
            "p_value": significant(previous.overall.p_value),
            "comparison": table,
        },
    )


def _codes(prefix: str, codes: Mapping[str, int]) -> dict[str, int]:
    """The failure codes of the attempts that did not run, one metadata key each."""
    return {f"{prefix}/{code}": count for code, count in codes.items()}


def comparison_table(groups: Mapping[str, PairedGroup]) -> str:
    lines = [
        "| group | pairs | baseline | now | Δ | 95% CI | p | verdict |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for name, group in groups.items():
        p = group.p_holm if group.p_holm is not None else group.p_value
        ci = "—" if group.ci95 is None else f"{group.ci95[0]:+.3f} to {group.ci95[1]:+.3f}"
        lines.append(
            f"| {name} | {group.pairs} | {rounded(group.baseline_pass_rate)} "
            f"| {rounded(group.pass_rate)} | {rounded(group.delta)} | {ci} | {p:.3g} "
            f"| {group.verdict} |"
        )
    return "\n".join(lines)


def prompts_check(current: str, versions: Mapping[str, str | None]) -> CheckOutcome:
    """`graded_with_current_prompts`: the run partitions whose latest verdicts were graded
    with prompts other than `current`."""
    outdated = sorted(run for run, version in versions.items() if version != current)
    return CheckOutcome(
        GRADED_WITH_CURRENT_PROMPTS,
        passed=not outdated,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"{len(outdated)} of {len(versions)} runs graded with outdated prompts"
            if outdated
            else "every run was graded with the current prompts"
        ),
        metadata={
            "prompts_version": current,
            "graded_runs": len(versions),
            "outdated_runs": len(outdated),
            "outdated": dg.MetadataValue.md("\n".join(f"- `{run}`" for run in outdated) or "none"),
        },
    )


def recorded_text(
    instance: dg.DagsterInstance, key: dg.AssetKey, name: str, *, partition: str | None = None
) -> str | None:
    """The text metadata `name` of the latest materialization of the asset `key` (of its
    partition `partition`), or None when there is none or it is not text."""
    records = dg.AssetRecordsFilter(
        asset_key=key, asset_partitions=None if partition is None else [partition]
    )
    result = instance.fetch_materializations(records, limit=1)
    latest = result.records[0].asset_materialization if result.records else None
    recorded = latest.metadata.get(name) if latest is not None else None
    value = recorded.value if isinstance(recorded, dg.TextMetadataValue) else recorded
    return value if isinstance(value, str) else None


def recorded_suite_digest(instance: dg.DagsterInstance, key: dg.AssetKey, suite: str) -> str | None:
    """The digest (see `suite`) of the latest materialization of the `suites` partition `suite`."""
    return recorded_text(instance, key, "digest", partition=suite)


def recorded_prompts_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The prompts version (see `prompts`) of the latest `judge_prompts` materialization."""
    return recorded_text(instance, key, "prompts_version")
