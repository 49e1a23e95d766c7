"""Judge calibration (SPEC.md section 11): human labels of judged criteria, read and written."""

from .labels import (
    FIXED_LABELS,
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
    read_labels,
)

__all__ = [
    "FIXED_LABELS",
    "JUDGED_KINDS",
    "LABELS_FILE",
    "LABELS_GLOB",
    "LabelLine",
    "LabelsRead",
    "LeftOut",
    "ReadLabel",
    "append_label",
    "check_label",
    "criterion_of",
    "is_judged",
    "label_choices",
    "label_files",
    "label_target",
    "read_labels",
]
