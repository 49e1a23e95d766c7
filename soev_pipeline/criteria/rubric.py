"""`rubric.judge`: a judge grades the reply against a rubric file or a watsonx.gov-style criterion.

The two forms are checked when the suite loads. A rubric file gives the text and its
labels, and passes on `pass_labels`. A watsonx.gov-style criterion (inline, or one of the
catalog by name) gives a question with named options; the labels are the option names, and
the reply passes when the chosen option's value is at least `min_value`.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from pydantic import Field, field_validator, model_validator

from soev_pipeline.core.models import Case, Evidence, FrozenModel, Verdict
from soev_pipeline.core.ports import CriterionContext, JudgeRequest

from .judged import with_reason
from .kind import criterion
from .verdicts import error, judge_label, outcome
from .watsonx import Criteria, catalog_criterion, render


def _unique(values: tuple[str, ...], field: str) -> None:
    duplicates = sorted({value for value in values if values.count(value) > 1})
    if duplicates:
        raise ValueError(f"{field} must be unique; repeated: {', '.join(map(repr, duplicates))}")


class RubricParams(FrozenModel):
    """Either `rubric` with `labels` and `pass_labels`, or `criterion` with `min_value`.

    `rubric` is a path relative to project.yaml; the loader reads it once, at load time.
    `criterion` is a catalog name (coherence, conciseness, consistency, harmfulness,
    summarization_quality, in any case or as the display name) or an inline criterion.
    `min_value` defaults to the highest option value: only the best option passes.
    """

    rubric: str | None = Field(default=None, min_length=1)
    labels: tuple[str, ...] = ()
    pass_labels: tuple[str, ...] = ()
    criterion: Criteria | None = None
    min_value: float | None = Field(default=None, allow_inf_nan=False)

    @field_validator("rubric")
    @classmethod
    def _project_relative(cls, rubric: str | None) -> str | None:
        if rubric is None:
            return None
        posix, windows = PurePosixPath(rubric), PureWindowsPath(rubric)
        if posix.is_absolute() or windows.is_absolute() or windows.drive:
            raise ValueError(f"{rubric!r} must be a path relative to project.yaml")
        if ".." in posix.parts or ".." in windows.parts:
            raise ValueError(f"{rubric!r} must stay inside the project directory")
        return rubric

    @field_validator("criterion", mode="before")
    @classmethod
    def _from_catalog(cls, value: Any) -> Any:
        return catalog_criterion(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_form(self) -> RubricParams:
        if (self.rubric is None) == (self.criterion is None):
            raise ValueError("give exactly one of 'rubric' (a file) or 'criterion'")
        if self.criterion is None:
            self._check_file_form()
        else:
            self._check_criterion_form(self.criterion)
        return self

    def _check_file_form(self) -> None:
        if self.min_value is not None:
            raise ValueError("'min_value' belongs to a 'criterion', not to a rubric file")
        if not self.labels:
            raise ValueError("a rubric file needs 'labels', the labels the judge may give")
        if not self.pass_labels:
            raise ValueError("a rubric file needs 'pass_labels', the labels that pass")
        if any(not label.strip() for label in self.labels):
            raise ValueError("a label must not be blank")
        _unique(self.labels, "labels")
        _unique(self.pass_labels, "pass_labels")
        unknown = [label for label in self.pass_labels if label not in self.labels]
        if unknown:
            raise ValueError(f"pass_labels {', '.join(map(repr, unknown))} are not in labels")

    def _check_criterion_form(self, criterion: Criteria) -> None:
        if self.labels or self.pass_labels:
            raise ValueError(
                "'labels' and 'pass_labels' belong to a rubric file; a criterion's "
                "labels are its option names"
            )
        options = criterion.options
        if len(options) < 2:
            raise ValueError("a criterion needs at least two options")
        if any(not option.name.strip() for option in options):
            raise ValueError("an option name must not be blank")
        _unique(tuple(option.name for option in options), "option names")
        unvalued = [option.name for option in options if option.value is None]
        if unvalued:
            raise ValueError(f"options {', '.join(map(repr, unvalued))} need a value")
        values = self.values()
        lowest, highest = min(values.values()), max(values.values())
        if lowest == highest:
            raise ValueError("a criterion needs options of at least two different values")
        threshold = self.threshold()
        if not lowest < threshold <= highest:
            raise ValueError(
                f"min_value {threshold:g} must be above the lowest option value ({lowest:g}) "
                f"and at most the highest ({highest:g}), so that one option fails and one passes"
            )

    def choices(self) -> tuple[str, ...]:
        """The labels the judge may give: the option names of `criterion`, else `labels`."""
        if self.criterion is not None:
            return tuple(option.name for option in self.criterion.options)
        return self.labels

    def files(self) -> tuple[str, ...]:
        """The project files to read at load time: the rubric file, if any."""
        return (self.rubric,) if self.rubric is not None else ()

    def values(self) -> dict[str, float]:
        """The value of each option of the criterion, by option name."""
        if self.criterion is None:
            return {}
        return {o.name: o.value for o in self.criterion.options if o.value is not None}

    def threshold(self) -> float:
        """`min_value`, or the highest option value when it is not given."""
        if self.min_value is not None:
            return self.min_value
        return max(self.values().values(), default=0.0)


@criterion(
    "rubric.judge",
    RubricParams,
    version="2",
    needs={"judge"},
    labels=RubricParams.choices,
    files=RubricParams.files,
    summary=(
        "the judge's label is in `pass_labels` (a `rubric` file with its `labels`), or its "
        "option is worth at least `min_value` (a watsonx.gov-style `criterion`, inline or "
        "from the catalog)"
    ),
    example={"kind": "rubric.judge", "criterion": "conciseness"},
)
async def rubric_judge(
    case: Case, evidence: Evidence, *, params: RubricParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the judge's label passes: in `pass_labels`, or an option worth `min_value`.

    The request gives the allowed labels twice: in `inputs["labels"]`, so that the prompt
    text lists them, and as `allowed_labels`, the enum of the answer schema.
    """
    if evidence.reply is None:
        return error("the attempt has no final reply to grade")
    if params.criterion is not None:
        text = render(params.criterion)
    else:
        loaded = ctx.rubrics.get(params.rubric or "")
        if loaded is None:
            return error(f"the rubric file {params.rubric!r} was not loaded with the project")
        text = loaded
    labels = params.choices()
    request = JudgeRequest(
        task="rubric.judge",
        inputs={
            "rubric": text,
            "labels": list(labels),
            "question": list(case.turns),
            "reply": evidence.reply,
        },
        allowed_labels=labels,
    )
    result = await judge_label(request, ctx)
    if isinstance(result, Verdict):
        return result
    if params.criterion is None:
        passed = result.label in params.pass_labels
        detail = f"label {result.label!r} (pass: {', '.join(map(repr, params.pass_labels))})"
    else:
        value = params.values()[result.label]
        passed = value >= params.threshold()
        name = params.criterion.name or "criterion"
        detail = f"{name}: {result.label!r} worth {value:g} (min {params.threshold():g})"
    return outcome(passed=passed, detail=with_reason(detail, result))
