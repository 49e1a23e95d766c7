"""The data of an evaluation: cases, criteria, evidence and verdicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .canonical import digest
from .chars import scrub

Behaviour = Literal["answer", "refuse", "abstain"]
Split = Literal["dev", "test"]
Status = Literal["pass", "fail", "error", "not_applicable"]

SPLITS: tuple[Split, ...] = ("dev", "test")
STATUSES: tuple[Status, ...] = ("pass", "fail", "error", "not_applicable")


def _encodable(text: str, info: ValidationInfo) -> str:
    # JSON read back cannot hold a lone surrogate: only text made in Python needs the scan
    return text if info.mode == "json" else scrub(text)


WireText = Annotated[str, AfterValidator(_encodable)]
"""Text that may come from the system under test, a judge or a criterion: a lone surrogate
in it is replaced by U+FFFD when the model is made, so that the archive can always write it."""


class FrozenModel(BaseModel):
    """A pydantic model that refuses unknown fields and cannot change after validation."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class _HasTurns(FrozenModel):
    """A model with user turns, written as `input: text` or `turns: [text, ...]`."""

    turns: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _turns_from_input(cls, data: Any) -> Any:
        if isinstance(data, dict) and "input" in data:
            data = dict(data)
            text = data.pop("input")
            if "turns" in data:
                raise ValueError("give either input or turns, not both")
            data["turns"] = [text]
        return data

    @field_validator("turns")
    @classmethod
    def _nonblank_turns(cls, turns: tuple[str, ...]) -> tuple[str, ...]:
        if any(not turn.strip() for turn in turns):
            raise ValueError("a turn must not be blank")
        return turns


class CriterionSpec(FrozenModel):
    """One criterion of a case: its kind, weight, gate, and the kind's own parameters.

    In a suite file the parameters sit beside `kind`, `weight` and `gate`:
    `{kind: nuggets.coverage, min: 0.5, weight: 2}`. The model keeps them in `params`
    and serializes back to the flat form.
    """

    kind: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0.0, allow_inf_nan=False)
    gate: bool = False
    params: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_params(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        own = {"kind", "weight", "gate"}
        flat = {key: value for key, value in data.items() if key not in own}
        if set(flat) == {"params"} and isinstance(flat["params"], dict):
            return data
        return {**{key: data[key] for key in own if key in data}, "params": flat}

    @model_serializer(mode="plain")
    def _flatten(self) -> dict[str, Any]:
        return {"kind": self.kind, "weight": self.weight, "gate": self.gate, **self.params}


class Nugget(FrozenModel):
    """A fact that a good reply holds. Only vital nuggets count for `nuggets.coverage`."""

    text: str = Field(min_length=1)
    vital: bool = True


class Variant(_HasTurns):
    """A paraphrase of the case, run as its own thread in the same attempt as the base case."""

    id: str = Field(min_length=1, pattern=r"^\S+$")


class Sources(FrozenModel):
    """The sources of a case: required groups of alternatives, and forbidden ids."""

    required: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[str, ...] = ()

    @field_validator("required", mode="before")
    @classmethod
    def _groups(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [[item] if isinstance(item, str) else item for item in value]
        return value

    @field_validator("required")
    @classmethod
    def _nonempty_groups(cls, groups: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        if any(not group for group in groups):
            raise ValueError("a required source group must name at least one source id")
        for group in groups:
            for source in group:
                _check_source_id(source)
        return groups

    @field_validator("forbidden")
    @classmethod
    def _forbidden_ids(cls, forbidden: tuple[str, ...]) -> tuple[str, ...]:
        for source in forbidden:
            _check_source_id(source)
        return forbidden


def _check_source_id(source: str) -> None:
    """Refuse an id that is not a path of segments joined by `/` (docs/project.md#source-ids).

    Raises:
        ValueError: the id is empty, or has an empty segment or spaces around a segment.
    """
    if not source or any(not part or part != part.strip() for part in source.split("/")):
        raise ValueError(
            f"source id {source!r} is not a path of segments joined by '/', such as "
            "'BWBR0005537/artikel-6:7/lid-1' (no empty segment, no spaces around one)"
        )


class CaseDefinition(_HasTurns):
    """A case as a suite file writes it."""

    id: str = Field(min_length=1, pattern=r"^\S+$")
    split: Split = "dev"
    behaviour: Behaviour = "answer"
    message: str | None = None
    sources: Sources = Sources()
    nuggets: tuple[Nugget, ...] = ()
    variants: tuple[Variant, ...] = ()
    tags: tuple[str, ...] = ()
    criteria: tuple[CriterionSpec, ...] = ()


class Case(CaseDefinition):
    """A validated case of a suite, with the suite's shared criteria first in `criteria`.

    The loader sets `suite`; a case made by hand (in a criterion's unit test) may leave it.
    """

    suite: str = ""

    @property
    def input(self) -> str:
        """The first user turn."""
        return self.turns[0]

    def digest(self) -> str:
        """The SHA-256 of the case's canonical JSON: what a seal and a run manifest record."""
        return digest(self.model_dump(mode="json"))


def _now() -> datetime:
    return datetime.now(UTC)


class Usage(FrozenModel):
    """The tokens of one turn, as the system under test reported them."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Failure(FrozenModel):
    """Why a turn failed: a short code, a detail, and the HTTP status when there was one.

    `http_status` is left out of the JSON when None, so evidence without an HTTP error
    reads and writes as it did before the field existed.
    """

    code: WireText
    detail: WireText = ""
    http_status: int | None = Field(default=None, exclude_if=lambda value: value is None)


class Turn(FrozenModel):
    """One user turn and what the system under test answered."""

    input: str
    reply: WireText | None = None
    citations: tuple[WireText, ...] = ()
    usage: Usage | None = None
    duration_s: float = 0.0
    failure: Failure | None = None


class VariantEvidence(FrozenModel):
    """What a variant's own thread returned."""

    id: str
    reply: WireText | None = None
    citations: tuple[WireText, ...] = ()
    turns: tuple[Turn, ...] = ()


class Evidence(FrozenModel):
    """Everything one attempt of a case returned: one line of `evidence.jsonl`.

    `reply` and `citations` are those of the last turn; they are None and empty when a turn
    failed before the last one answered. `citations` are the ids of the cited units.
    """

    case_id: str
    suite: str = ""
    split: Split = "dev"
    attempt: int = Field(default=0, ge=0)
    turns: tuple[Turn, ...] = ()
    reply: WireText | None = None
    citations: tuple[WireText, ...] = ()
    refusal_code: str | None = None
    variants: tuple[VariantEvidence, ...] = ()
    started_at: datetime = Field(default_factory=_now)
    finished_at: datetime = Field(default_factory=_now)

    def all_turns(self) -> tuple[Turn, ...]:
        """The turns of the base case and of every variant."""
        return self.turns + tuple(turn for variant in self.variants for turn in variant.turns)

    @property
    def failure(self) -> Failure | None:
        """The first failure of the base case's turns or a variant's, or None."""
        return next((turn.failure for turn in self.all_turns() if turn.failure), None)


class Verdict(FrozenModel):
    """The outcome of one criterion on one attempt.

    `kind`, `weight`, `gate` and `version` are filled in by the registry; `judge_model`,
    `prompt_sha` and `rubric_sha` record what graded a judge criterion.
    """

    kind: str = ""
    status: Status
    detail: WireText = ""
    weight: float = 1.0
    gate: bool = False
    version: str = ""
    judge_model: str | None = None
    prompt_sha: str | None = None
    rubric_sha: str | None = None
