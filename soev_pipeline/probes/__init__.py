"""Judge probes (docs/judge.md#is-the-judge-fooled-probes): the same item with one controlled
change, graded again, to find what moves the judge's verdict that should not (verbosity,
an instruction to the grader, layout, the order of options) and whether a reply that
clearly fails does move it.

    from soev_pipeline.probes import probe_judge
    from soev_pipeline.project import ProjectPaths, load

    paths = ProjectPaths.of("project.yaml")
    probing = asyncio.run(probe_judge(load(paths.project_file), paths.state, paths.runs))
    print(probing.report.to_json())
"""

from .builders import (
    PROBE_NAMES,
    PROBES,
    Probe,
    Probed,
    ProbeKind,
    Target,
    generator,
    grades_reply,
    with_reply,
)
from .items import judged_criteria, label_targets, run_targets, select
from .results import DEFAULT_MAX_FLIP, CriterionProbes, ProbeFigures, ProbeReport
from .saved import SavedProbing, SavedTrial, read_probing, save_probing
from .service import DEFAULT_ITEMS, Probing, Trial, probe_judge, probe_targets
from .texts import BUILTIN, Texts

__all__ = [
    "BUILTIN",
    "DEFAULT_ITEMS",
    "DEFAULT_MAX_FLIP",
    "PROBES",
    "PROBE_NAMES",
    "CriterionProbes",
    "Probe",
    "ProbeFigures",
    "ProbeKind",
    "ProbeReport",
    "Probed",
    "Probing",
    "SavedProbing",
    "SavedTrial",
    "Target",
    "Texts",
    "Trial",
    "generator",
    "grades_reply",
    "judged_criteria",
    "label_targets",
    "probe_judge",
    "probe_targets",
    "read_probing",
    "run_targets",
    "save_probing",
    "select",
    "with_reply",
]
