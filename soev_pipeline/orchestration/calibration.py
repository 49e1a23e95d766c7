"""The judge measured against the human labels (SPEC.md section 11), as assets and a check.

`labels` records the project's label files (their data version is a hash of their paths and
bytes); `judge_calibration`, downstream of `judge_prompts` and `labels`, grades every
labelled item with the judge (`soev_pipeline.calibration.calibrate`, the function of
`soev-evals calibrate`) and holds the figures as metadata, and its check
`judge_agrees_with_labels` fails when a criterion's κ is below `judge.min_kappa` (default
0.6). The code version of `judge_calibration` is the prompts version, so a prompt edit
shows it stale as it does the verdicts, and a new `labels` materialization does too; the
prompts watch re-materializes both (`checks.build_prompts_watch`). In the lineage graph,
`judge_prompts` then feeds both `verdicts` and `judge_calibration`: a run was graded by a
judge that was measured when their prompts versions are the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from soev_pipeline.calibration import (
    DEFAULT_MIN_KAPPA,
    JUDGED_KINDS,
    Calibration,
    calibrate,
    labels_version,
    read_project_labels,
)
from soev_pipeline.project import LoadedProject

from .keys import ProjectKeys
from .metadata import CheckOutcome, recorded_text, rounded
from .resources import ProjectResource, RuntimeResource
from .steps import one_line_errors

JUDGE_AGREES_WITH_LABELS = "judge_agrees_with_labels"


def _judged(loaded: LoadedProject) -> bool:
    """Whether any case of the project has a criterion of a judge kind."""
    return any(spec.kind in JUDGED_KINDS for case in loaded.cases() for spec in case.criteria)


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


def read_labels(project: ProjectResource) -> dg.MaterializeResult[None]:
    """Record the project's label files; their data version is their hash."""
    loaded = project.loaded
    version = labels_version(loaded.directory, loaded.project.labels)
    with one_line_errors(project.paths.project_file):
        metadata = labels_metadata(loaded)
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(version))


def labels_request(
    instance: dg.DagsterInstance, keys: ProjectKeys, loaded: LoadedProject
) -> dg.RunRequest | None:
    """A run of `labels` and `judge_calibration` when the label files on disk differ from
    the recorded ones (hashed at every call, as the prompts are); else None."""
    current = labels_version(loaded.directory, loaded.project.labels)
    if recorded_text(instance, keys.asset("labels"), "labels_version") == current:
        return None
    return dg.RunRequest(
        run_key=f"labels-{current}",
        asset_selection=[keys.asset("labels"), keys.asset("judge_calibration")],
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
    (default 0.6); severity ERROR when the project sets `judge.min_kappa`, else WARN."""
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
    low = calibration.low_kappa(threshold)
    kappas: Mapping[str, float | None] = {
        name: figures.kappa for name, figures in calibration.criteria.items()
    }
    return CheckOutcome(
        JUDGE_AGREES_WITH_LABELS,
        passed=not low,
        severity=severity,
        description=(
            f"κ below {threshold:g} (or unknown): {', '.join(low)}"
            if low
            else f"every judged criterion's κ is at least {threshold:g}"
        ),
        metadata={
            "min_kappa": threshold,
            "below": len(low),
            **{f"kappa/{name}": rounded(value) for name, value in kappas.items()},
        },
    )


def calibrate_judge(
    project: ProjectResource, runtime: RuntimeResource
) -> Iterator[dg.MaterializeResult[None] | dg.AssetCheckResult]:
    """Grade every labelled item with the judge and the current prompts; record the figures
    and evaluate `judge_agrees_with_labels`. Without labels, the judge is not opened."""
    loaded, paths = project.loaded, project.paths
    config = loaded.project.judge
    min_kappa = config.min_kappa if config is not None else None
    calibration = None
    with one_line_errors(paths.project_file):
        if read_project_labels(loaded).items:
            calibration, _ = runtime.session.run(calibrate(loaded, paths.state))
    metadata: dict[str, Any] = {"prompts_version": loaded.prompts_version, "items": 0}
    if calibration is not None:
        metadata = calibration_metadata(calibration, loaded.prompts_version)
    yield dg.MaterializeResult(metadata=metadata)
    yield agreement_check(calibration, min_kappa=min_kappa, judged=_judged(loaded)).result()


def build_calibration_assets(keys: ProjectKeys, prompts_version: str) -> list[dg.AssetsDefinition]:
    """`labels` and `judge_calibration` (with its check) under the keys of a project."""

    def spec(name: str, description: str, **extra: Any) -> dg.AssetSpec:
        return dg.AssetSpec(
            keys.asset(name), group_name=keys.group, description=description, **extra
        )

    labels = dg.multi_asset(
        name="read_labels",
        specs=[
            spec(
                "labels",
                "The human labels of judged criteria (labels/*.jsonl), with their hash.",
                kinds={"json"},
            )
        ],
    )(read_labels)
    calibration = dg.multi_asset(
        name="calibrate_judge",
        specs=[
            spec(
                "judge_calibration",
                "The judge against the human labels: agreement, recalls and Cohen's κ per "
                "judged criterion.",
                deps=[keys.asset("judge_prompts"), keys.asset("labels")],
                code_version=prompts_version,
            )
        ],
        check_specs=[
            dg.AssetCheckSpec(
                JUDGE_AGREES_WITH_LABELS,
                asset=keys.asset("judge_calibration"),
                description=(
                    "Fails when a judged criterion's Cohen's κ against the human labels is "
                    "below judge.min_kappa (default 0.6): severity WARN, or ERROR when "
                    "project.yaml sets judge.min_kappa."
                ),
            )
        ],
    )(calibrate_judge)
    return [labels, calibration]
