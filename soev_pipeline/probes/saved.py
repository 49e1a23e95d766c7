"""The last probing of a project, kept for the viewer (docs/judge.md#the-last-probing).

`probe_judge` writes what it found to `.soev/probes/<project>.json` (`probes_file`): the
figures, the settings, and every trial with both replies and both verdicts. It writes
through a temporary file and a rename, so a reader sees the previous probing or the new
one, never half of one. The viewer reads this file and never asks the judge itself.
"""

from __future__ import annotations

import json
import stat
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from soev_pipeline.core.canonical import digest
from soev_pipeline.core.chars import scrub
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import CriterionSpec, FrozenModel, Verdict
from soev_pipeline.core.outputs import replace_file
from soev_pipeline.core.secrets import redact
from soev_pipeline.criteria.rubric import RubricParams

from .builders import ProbeKind, Source, Target
from .results import ProbeReport

MAX_BYTES = 256 * 1024 * 1024
"""A probing file larger than this is refused rather than read into memory."""

Direction = Literal["to_pass", "to_fail"]


def trial_id(target: Target, probe: str) -> str:
    """A trial's id: the same for the same criterion, case, reply and probe, so an address
    of the viewer stays good across probings that drew the same item."""
    return digest([*target.key, probe])[:16]


def options_of(spec: CriterionSpec) -> tuple[str, ...] | None:
    """The options a `rubric.judge` criterion offers the judge, in their order: its
    criterion's option names, or its rubric's labels; None for any other kind."""
    if spec.kind != "rubric.judge":
        return None
    try:
        params = RubricParams.model_validate(spec.params)
    except ValidationError:
        return None
    if params.criterion is not None:
        return tuple(option.name for option in params.criterion.options)
    return params.labels


class SavedTrial(FrozenModel):
    """One probe of one item: what the judge saw and said before and after the change.

    `attempt` is the run's attempt for an item of the run, None for a labelled reply.
    `options` and `probed_options` are the options the judge was offered, when the probe
    changed them (`option_order`).
    """

    id: str
    criterion: str
    case_id: str
    source: Source
    attempt: int | None
    probe: str
    kind: ProbeKind
    reply: str
    probed_reply: str
    options: tuple[str, ...] | None = None
    probed_options: tuple[str, ...] | None = None
    original: Verdict
    probed: Verdict | None
    """None when the judge was not asked: the original verdict was already an error."""

    @property
    def statuses(self) -> tuple[str, str]:
        return self.original.status, "error" if self.probed is None else self.probed.status

    @property
    def direction(self) -> Direction | None:
        """How the verdict moved: `to_pass`, `to_fail`, or None when it did not."""
        before, after = self.statuses
        if (before, after) == ("fail", "pass"):
            return "to_pass"
        if (before, after) == ("pass", "fail"):
            return "to_fail"
        return None


class SavedProbing(FrozenModel):
    """What one probe run found, and how it was asked for (`criteria`: the names it was
    limited to, None for every judged criterion)."""

    format: Literal[1] = 1
    project: str
    probed_at: datetime
    prompts_version: str
    run_id: str | None
    sources: dict[str, int]
    items: int
    seed: int
    criteria: tuple[str, ...] | None
    offline: bool
    report: ProbeReport
    trials: tuple[SavedTrial, ...]


def save_probing(path: Path, probing: SavedProbing) -> None:
    """Write `probing` to `path` atomically (a temporary file beside it, then a rename);
    secrets are redacted, as in the run archive.

    Raises:
        ProjectError: `path` is there but is not a regular file, or its folder cannot be.
    """
    text = redact(scrub(probing.model_dump_json(indent=1))) + "\n"
    replace_file(
        path,
        lambda temporary: temporary.write_text(text, encoding="utf-8"),
        option="the probing file",
    )


def read_probing(path: Path) -> SavedProbing | None:
    """The probing saved at `path`; None when there is none yet.

    Raises:
        ProjectError: the file is not a regular file, too large, or not a probing.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise ProjectError(f"{path}: not a regular file")
    if info.st_size > MAX_BYTES:
        raise ProjectError(f"{path}: {info.st_size} bytes, more than a probing file may have")
    try:
        return SavedProbing.model_validate(json.loads(path.read_bytes()))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the file"
        raise ProjectError(
            f"{path}: not a probing of probe-judge ({field}: {first['msg']}); "
            "run soev-evals probe-judge again"
        ) from None
    except ValueError as exc:
        raise ProjectError(
            f"{path}: not a probing of probe-judge ({exc}); run soev-evals probe-judge again"
        ) from None
