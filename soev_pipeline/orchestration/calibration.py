"""The judge measured against the human labels, as assets and a check.

`labels` records the label files: its data version is a hash of their paths and bytes.
`judge_calibration`, downstream of `judge_prompts` and `labels`, grades every labelled item
with the judge (`soev_pipeline.calibration.calibrate`, the function of `soev-evals
calibrate`) and holds the figures as metadata; its check `judge_agrees_with_labels` fails
when a criterion's κ is below `judge.min_kappa` (default 0.6). A prompt or label edit,
once recorded, makes it stale in Dagster's own lineage, and the prompts watch materializes
it again (`sensors`). In the lineage graph `judge_prompts` feeds both `verdicts` and
`judge_calibration`: a run was graded by a judge that was measured when the two record the
same prompts version.
"""

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.api import run_sync
from soev_pipeline.calibration import (
    DEFAULT_MIN_ITEMS,
    DEFAULT_MIN_KAPPA,
    Calibration,
    calibrate,
    labels_version,
    read_project_labels,
)
from soev_pipeline.project import LoadedProject

from .assets import spec
from .failures import one_line_errors
from .metadata import CheckOutcome, rounded
from .resources import SoevProject
from .versions import FIXED

JUDGE_AGREES_WITH_LABELS = "judge_agrees_with_labels"


def _judged(loaded: LoadedProject) -> bool:
    """Whether any case of the project has a criterion of a judge kind."""
    kinds = {spec.kind for case in loaded.cases() for spec in case.criteria}
    return any(loaded.registry.get(kind).needs_judge for kind in kinds)


def labels_metadata(loaded: LoadedProject) -> dict[str, Any]:
    """`labels`: the files, the labels that count per kind, the lines left out (by file and
    line, never their content), and the version."""
    labelled = read_project_labels(loaded)
    kinds = Counter(item.kind for item in labelled.items for _ in item.labels)
    files = sorted({str(read.file) for item in labelled.items for read in item.labels})
    files += sorted({left.file for left in labelled.left_out} - set(files))
    shown = [_relative(loaded, name) for name in files]
    return {
        "labels_version": labels_version(loaded.directory, loaded.project.labels),
        "labels_read": labelled.labels_read,
        "items": len(labelled.items),
        "left_out": len(labelled.left_out),
        **{f"labels/{kind}": count for kind, count in sorted(kinds.items())},
        "files": dg.MetadataValue.md("\n".join(f"- `{name}`" for name in shown) or "none"),
    }


def _relative(loaded: LoadedProject, name: str) -> str:
    path = Path(name)
    return (
        str(path.relative_to(loaded.directory)) if path.is_relative_to(loaded.directory) else name
    )


def calibration_table(calibration: Calibration) -> str:
    lines = [
        "| criterion | items | agreement | pass recall | fail recall | κ | κ 95% CI | people κ |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    rows = {**calibration.criteria, "overall": calibration.overall}
    for name, figures in rows.items():
        ci = (
            "—"
            if figures.kappa_ci95 is None
            else f"{figures.kappa_ci95[0]:.2f} to {figures.kappa_ci95[1]:.2f}"
        )
        lines.append(
            f"| `{name}` | {figures.items} | {rounded(figures.agreement)} "
            f"| {rounded(figures.pass_recall)} | {rounded(figures.fail_recall)} "
            f"| {rounded(figures.kappa)} | {ci} | {rounded(figures.human_kappa)} |"
        )
    return "\n".join(lines)


def calibration_metadata(calibration: Calibration, prompts_version: str) -> dict[str, Any]:
    """`judge_calibration`: κ and agreement per criterion (so the UI plots them over
    materializations), the table, the counts and the prompts version that was measured."""
    metadata: dict[str, Any] = {
        "prompts_version": prompts_version,
        "labels_read": calibration.labels_read,
        "left_out": len(calibration.left_out),
        "items": calibration.overall.items,
    }
    rows = {**calibration.criteria, "overall": calibration.overall}
    for name, figures in rows.items():
        metadata[f"kappa/{name}"] = rounded(figures.kappa)
        metadata[f"agreement/{name}"] = rounded(figures.agreement)
    metadata["figures"] = dg.MetadataValue.md(calibration_table(calibration))
    if calibration.judge:
        metadata.update({f"judge_{key}": value for key, value in calibration.judge.items()})
    return metadata


def agreement_check(
    calibration: Calibration | None, *, min_kappa: float | None, judged: bool
) -> CheckOutcome:
    """`judge_agrees_with_labels`: every labelled criterion's κ at least `min_kappa`
    (default 0.6) on at least `DEFAULT_MIN_ITEMS` items, as `calibrate --min-kappa` gates
    it; severity ERROR when the project sets `judge.min_kappa`, else WARN."""
    severity = dg.AssetCheckSeverity.ERROR if min_kappa is not None else dg.AssetCheckSeverity.WARN
    threshold = DEFAULT_MIN_KAPPA if min_kappa is None else min_kappa
    if calibration is None or not calibration.criteria:
        return CheckOutcome(
            JUDGE_AGREES_WITH_LABELS,
            passed=not judged,
            severity=severity,
            description=(
                "no labelled item: the judge is not measured; label replies "
                "(soev-evals view, or labels/*.jsonl)"
                if judged
                else "the project has no judged criterion"
            ),
            metadata={"min_kappa": threshold},
        )
    failures = calibration.gate_failures(threshold, DEFAULT_MIN_ITEMS)
    kappas: Mapping[str, float | None] = {
        name: figures.kappa for name, figures in calibration.criteria.items()
    }
    why = "; ".join(f"{name}: {reason}" for name, reason in failures.items())
    return CheckOutcome(
        JUDGE_AGREES_WITH_LABELS,
        passed=not failures,
        severity=severity,
        description=(
            f"not shown to agree (κ at least {threshold:g} on {DEFAULT_MIN_ITEMS} items or "
            f"more): {why}"
            if failures
            else f"every judged criterion's κ is at least {threshold:g}, "
            f"on {DEFAULT_MIN_ITEMS} items or more"
        ),
        metadata={
            "min_kappa": threshold,
            "min_items": DEFAULT_MIN_ITEMS,
            "below": len(failures),
            **{f"kappa/{name}": rounded(value) for name, value in kappas.items()},
        },
    )


@dg.multi_asset(
    name="read_labels",
    specs=[
        spec(
            "labels",
            "load",
            "The human labels of judged criteria (labels/*.jsonl); its data version is their hash.",
            kinds={"json"},
            code_version=FIXED,
        )
    ],
)
def read_labels(
    context: dg.AssetExecutionContext, project: SoevProject
) -> dg.MaterializeResult[None]:
    """Record the project's label files; their data version is their hash."""
    loaded = project.loaded
    with one_line_errors(project.project_file):
        figures = labels_metadata(loaded)
    return dg.MaterializeResult(
        asset_key=context.asset_key,
        metadata=figures,
        data_version=dg.DataVersion(str(figures["labels_version"])),
    )


@dg.multi_asset(
    name="calibrate_judge",
    specs=[
        spec(
            "judge_calibration",
            "calibrate",
            "The judge against the human labels: agreement, recalls and Cohen's κ per judged "
            "criterion.",
            code_version=FIXED,
        )
    ],
    check_specs=[
        dg.AssetCheckSpec(
            JUDGE_AGREES_WITH_LABELS,
            asset="judge_calibration",
            description=(
                "Fails when a judged criterion's Cohen's κ against the human labels is below "
                "judge.min_kappa (default 0.6): severity WARN, or ERROR when project.yaml sets "
                "judge.min_kappa."
            ),
        )
    ],
)
def calibrate_judge(
    context: dg.AssetExecutionContext, project: SoevProject
) -> Iterator[dg.MaterializeResult[None] | dg.AssetCheckResult]:
    """Grade every labelled item with the judge and the current prompts; record the figures
    and evaluate `judge_agrees_with_labels`. Without labels, the judge is not opened."""
    loaded, paths = project.loaded, project.paths
    config = loaded.project.judge
    min_kappa = config.min_kappa if config is not None else None
    calibration = None
    with one_line_errors(paths.project_file):
        if read_project_labels(loaded).items:
            calibration, _ = run_sync(calibrate(loaded, paths.state))
    figures: dict[str, Any] = {"prompts_version": loaded.prompts_version, "items": 0}
    if calibration is not None:
        figures = calibration_metadata(calibration, loaded.prompts_version)
    yield dg.MaterializeResult(asset_key=context.asset_key, metadata=figures)
    check = agreement_check(calibration, min_kappa=min_kappa, judged=_judged(loaded))
    yield check.result(context.asset_key)
