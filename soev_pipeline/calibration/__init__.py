"""Judge calibration (docs/judge.md#is-the-judge-right-calibration-against-human-labels):
human labels of judged criteria, read and written; the judge measured against them; a run's
judged rates corrected for what they find.

    from soev_pipeline.calibration import calibrate
    from soev_pipeline.project import ProjectPaths, load

    paths = ProjectPaths.of("project.yaml")
    calibration, _ = asyncio.run(calibrate(load(paths.project_file), paths.state))
    print(calibration.criteria["behaviour.expected"].kappa)
"""

from .agreement import (
    Agreement,
    Confusion,
    Outcome,
    agreement_interval,
    agreement_of,
    human_agreement,
    kappa,
)
from .corrected import (
    Correction,
    JudgedRate,
    correct,
    corrected_interval,
    judged_rate,
    rogan_gladen,
    youden_interval,
)
from .items import Item, criterion_name, gather
from .labels import (
    JUDGED_KINDS,
    LABELS_FILE,
    LABELS_GLOB,
    LabelLine,
    LabelsRead,
    LeftOut,
    ReadLabel,
    append_label,
    check_label,
    criterion_of,
    is_judged,
    label_choices,
    label_files,
    label_target,
    labels_version,
    read_labels,
)
from .queue import (
    Candidate,
    LabelQueue,
    Plan,
    Progress,
    Stratum,
    next_to_label,
    why_not_labelled,
)
from .rates import RunRates, run_rates
from .results import Calibration, ConfusionTable, CriterionFigures, JudgeColumn
from .service import (
    DEFAULT_MIN_ITEMS,
    DEFAULT_MIN_KAPPA,
    Judged,
    Labelled,
    calibrate,
    calibrated_kinds,
    calibration_judge,
    calibration_of,
    judge_labels,
    kappa_differences,
    project_label_files,
    read_project_labels,
)

__all__ = [
    "DEFAULT_MIN_ITEMS",
    "DEFAULT_MIN_KAPPA",
    "JUDGED_KINDS",
    "LABELS_FILE",
    "LABELS_GLOB",
    "Agreement",
    "Calibration",
    "Candidate",
    "Confusion",
    "ConfusionTable",
    "Correction",
    "CriterionFigures",
    "Item",
    "JudgeColumn",
    "Judged",
    "JudgedRate",
    "LabelLine",
    "LabelQueue",
    "Labelled",
    "LabelsRead",
    "LeftOut",
    "Outcome",
    "Plan",
    "Progress",
    "ReadLabel",
    "RunRates",
    "Stratum",
    "agreement_interval",
    "agreement_of",
    "append_label",
    "calibrate",
    "calibrated_kinds",
    "calibration_judge",
    "calibration_of",
    "check_label",
    "correct",
    "corrected_interval",
    "criterion_name",
    "criterion_of",
    "gather",
    "human_agreement",
    "is_judged",
    "judge_labels",
    "judged_rate",
    "kappa",
    "kappa_differences",
    "label_choices",
    "label_files",
    "label_target",
    "labels_version",
    "next_to_label",
    "project_label_files",
    "read_labels",
    "read_project_labels",
    "rogan_gladen",
    "run_rates",
    "why_not_labelled",
    "youden_interval",
]
