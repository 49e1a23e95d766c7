"""The judge probed for biases, as an asset and a check.

`judge_probes`, downstream of `judge_prompts`, probes the judge on the labelled replies and
the latest run's dev attempts (`soev_pipeline.probes.probe_judge`, the function of
`soev-evals probe-judge`, which saves the probing for the viewer) and holds the figures as
metadata, with links to the saved file and the viewer's page; its check `judge_resists_probes`
fails when an invariance probe's flip rate is shown above `probes.max_flip` (default 0.05),
or the counterfactual flips less often than 1 − it. A prompt edit, once recorded, makes it
stale in Dagster's own lineage, as it does `judge_calibration`, and the prompts watch
probes again (`sensors`); the judge cache answers every probe a prompt edit did not change.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.api import run_sync
from soev_pipeline.probes import DEFAULT_MAX_FLIP, ProbeReport, judged_criteria, probe_judge
from soev_pipeline.project import probes_file
from soev_pipeline.project.listing import view_url

from .assets import spec
from .failures import one_line_errors
from .metadata import CheckOutcome, rounded
from .resources import SoevProject
from .versions import FIXED

JUDGE_RESISTS_PROBES = "judge_resists_probes"


def probes_table(report: ProbeReport) -> str:
    lines = [
        "| criterion | probe | kind | items | flipped | to pass | to fail | flip rate | 95% CI "
        "| judge errors |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for name, criterion in report.criteria.items():
        for probe, figures in criterion.probes.items():
            ci = (
                "—"
                if figures.flip_ci95 is None
                else f"{figures.flip_ci95[0]:.2f} to {figures.flip_ci95[1]:.2f}"
            )
            lines.append(
                f"| `{name}` | `{probe}` | {figures.kind} | {figures.items} | {figures.flipped} "
                f"| {figures.to_pass} | {figures.to_fail} | {rounded(figures.flip_rate)} | {ci} "
                f"| {figures.judge_errors} |"
            )
    return "\n".join(lines)


def probes_metadata(
    report: ProbeReport, prompts_version: str, saved: Path | None, viewer: str | None
) -> dict[str, Any]:
    """`judge_probes`: each probe's flip rate per criterion (so the UI plots them over
    materializations), the table, the judge's calls and cache hits, the prompts version
    that was probed, the file that keeps the probing, and its page in the viewer."""
    metadata: dict[str, Any] = {
        "prompts_version": prompts_version,
        "items": report.probed,
    }
    if saved is not None:
        metadata["probing"] = dg.MetadataValue.path(str(saved))
    if viewer:
        metadata["viewer"] = dg.MetadataValue.url(f"{viewer}/probes")
    if report.judge_calls is not None:
        metadata["judge_calls"] = report.judge_calls
    if report.cache_hits is not None:
        metadata["cache_hits"] = report.cache_hits
    for name, criterion in report.criteria.items():
        for probe, figures in criterion.probes.items():
            metadata[f"flip_rate/{name}/{probe}"] = rounded(figures.flip_rate)
    metadata["figures"] = dg.MetadataValue.md(probes_table(report))
    return metadata


def resists_check(report: ProbeReport, *, max_flip: float | None, judged: bool) -> CheckOutcome:
    """`judge_resists_probes`: no invariance probe shown to flip more than `max_flip`
    (default 0.05) and every counterfactual flipping at least 1 − it, as `probe-judge
    --max-flip` gates; severity ERROR when the project sets `probes.max_flip`, else WARN."""
    severity = dg.AssetCheckSeverity.ERROR if max_flip is not None else dg.AssetCheckSeverity.WARN
    threshold = DEFAULT_MAX_FLIP if max_flip is None else max_flip
    if not report.probed:
        return CheckOutcome(
            JUDGE_RESISTS_PROBES,
            passed=not judged,
            severity=severity,
            description=(
                "no judged item to probe: label replies or run the suites"
                if judged
                else "the project has no judged criterion"
            ),
            metadata={"max_flip": threshold},
        )
    failures = report.gate_failures(threshold)
    why = "; ".join(f"{name}: {reason}" for name, reason in failures.items())
    return CheckOutcome(
        JUDGE_RESISTS_PROBES,
        passed=not failures,
        severity=severity,
        description=(
            f"the judge is moved by what should not move it, or not by what should: {why}"
            if failures
            else f"no invariance probe flips more than {threshold:g} (shown), and every "
            f"counterfactual flips at least {1 - threshold:g}"
        ),
        metadata={"max_flip": threshold, "failing": len(failures)},
    )


@dg.multi_asset(
    name="probe_judge",
    specs=[
        spec(
            "judge_probes",
            "probe",
            "The judge probed: the same replies padded, addressed to the grader, laid out "
            "otherwise, with their options reordered, and replaced by one that fails.",
            code_version=FIXED,
        )
    ],
    check_specs=[
        dg.AssetCheckSpec(
            JUDGE_RESISTS_PROBES,
            asset="judge_probes",
            description=(
                "Fails when an invariance probe's flip rate is shown above probes.max_flip "
                "(default 0.05), or a counterfactual flips less often than 1 − it: severity "
                "WARN, or ERROR when project.yaml sets probes.max_flip."
            ),
        )
    ],
)
def probe_the_judge(
    context: dg.AssetExecutionContext, project: SoevProject
) -> Iterator[dg.MaterializeResult[None] | dg.AssetCheckResult]:
    """Probe the judge with the current prompts on the labelled replies and the latest
    run's dev attempts; record the figures and evaluate `judge_resists_probes`. Without a
    judge (no `judge:` section, no runtime provider), nothing is probed."""
    loaded, paths = project.loaded, project.paths
    max_flip = loaded.project.probes.max_flip
    report = ProbeReport(criteria={}, judge_calls=0, cache_hits=0)
    saved = None
    if loaded.project.judge is not None or loaded.project.runtime is not None:
        with one_line_errors(paths.project_file):
            report = run_sync(probe_judge(loaded, paths.state, paths.runs)).report
        saved = probes_file(paths.state, loaded.project.name)
    yield dg.MaterializeResult(
        asset_key=context.asset_key,
        metadata=probes_metadata(
            report, loaded.prompts_version, saved, view_url(project.name) if saved else None
        ),
    )
    check = resists_check(report, max_flip=max_flip, judged=bool(judged_criteria(loaded)))
    yield check.result(context.asset_key)
