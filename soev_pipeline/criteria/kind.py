"""A criterion kind: its name, parameters, traits and evaluator, declared in one place.

`Builtin` is the kind of the public API; `criterion` makes one from a decorated evaluator,
with its traits on the decorator. `described` gives any other object with the seed's
`CriterionKind` protocol the traits a caller needs, with safe defaults; the registry calls
it on every kind it registers, so nothing downstream asks a kind what it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict

from soev_pipeline.core.models import Case, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext

P = TypeVar("P", bound=BaseModel)
P_contra = TypeVar("P_contra", bound=BaseModel, contravariant=True)

Need = Literal["judge", "language_detector", "corpus"]
"""A service of the `CriterionContext` that a kind grades with."""
NEEDS: frozenset[Need] = frozenset(get_args(Need))
"""Every service: what a kind is taken to need when it does not say."""


class NoParams(BaseModel):
    """The parameters of a kind that takes none: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Prepare = Callable[[Sequence[Evidence], CriterionContext], None]
"""Work a kind does once for many attempts, before each is evaluated (see `Builtin`)."""


class Evaluator(Protocol[P_contra]):
    """The async function that grades the evidence of one attempt for a `Builtin` kind."""

    async def __call__(
        self, case: Case, evidence: Evidence, *, params: P_contra, ctx: CriterionContext
    ) -> Verdict: ...


@runtime_checkable
class CriterionKind(Protocol):
    """What the registry needs of a kind: a name, a parameter model and `evaluate`.

    The two attributes are read-only here, so that a frozen `Builtin` has the protocol too.
    """

    @property
    def name(self) -> str: ...

    @property
    def params_model(self) -> type[BaseModel]: ...

    async def evaluate(
        self, case: Case, evidence: Evidence, *, params: BaseModel, ctx: CriterionContext
    ) -> Verdict: ...


@dataclass(frozen=True)
class Builtin(Generic[P]):
    """A criterion kind made of a name, a parameter model and a typed evaluator.

    The keyword fields are the kind's traits. Everything the pipeline does with a kind
    derives from them, so a kind is described once, beside its evaluator:

    - `version`: raise it whenever a verdict could change; every verdict records it, so a
      rescore can tell which version graded what.
    - `needs`: the services of the `CriterionContext` the evaluator uses. It also decides
      where the kind is graded: a forked worker process may grade a kind that needs no
      judge (and the language detector only when it is the bundled one; see
      `CriterionRegistry.forkable`). A kind that does not say is taken to need them all,
      which is always safe: it is graded in the main process.
    - `summary`: one line that completes "passes when ...", for the table of kinds.
    - `example`: one criterion as a suite writes it, `kind` included, for the same table.
    - `labels`: the labels the judge gives an attempt, for a kind that asks the judge one
      question per attempt: a tuple, or a function of the criterion's parameters (the
      labels of `rubric.judge` are its parameters'). People label with the same set when
      they calibrate the judge. Empty for a kind that asks several questions per attempt
      (one per nugget, one per variant) or none.
    - `files`: a function that names the project files a criterion of the kind reads, from
      its parameters (paths relative to project.yaml, such as a rubric). The loader reads
      them once, into `CriterionContext.rubrics`; None for a kind that reads none.
    - `prepare`: a function that does, for the evidence of many attempts at once, work
      that the evaluator would otherwise do for each alone and that costs less done
      together (`reply.language` asks the detector for the sentences of every reply at
      once). Grading calls it a chunk of attempts at a time (`CriterionRegistry.prepare`).
      It only saves time: the evaluator gives the same verdict without it, and a failure
      in it is left for the evaluator to report. None for a kind that has nothing to share.

    Raises:
        ValueError: `needs` names a service that does not exist, `example` names another
            kind, or `labels` are blank or repeated, or given without `needs` holding the
            judge.
    """

    name: str
    params_model: type[P]
    evaluator: Evaluator[P]
    version: str = "1"
    _: KW_ONLY
    needs: frozenset[Need] = NEEDS
    summary: str = ""
    example: Mapping[str, Any] = field(default_factory=dict, hash=False)
    labels: tuple[str, ...] | Callable[[P], Sequence[str]] = ()
    files: Callable[[P], Sequence[str]] | None = None
    prepare: Prepare | None = None

    def __post_init__(self) -> None:
        needs = frozenset(self.needs)
        unknown = sorted(str(need) for need in needs - NEEDS)
        if unknown:
            known = ", ".join(map(repr, sorted(NEEDS)))
            raise ValueError(f"kind {self.name!r}: unknown needs {unknown} (known: {known})")
        object.__setattr__(self, "needs", needs)
        if self.example and self.example.get("kind") != self.name:
            raise ValueError(f"kind {self.name!r}: its example must say kind: {self.name}")
        if self.labels and "judge" not in needs:
            raise ValueError(f"kind {self.name!r}: labels are the judge's; its needs lack 'judge'")
        if not callable(self.labels):
            labels = tuple(self.labels)
            if any(not label.strip() for label in labels) or len(set(labels)) < len(labels):
                raise ValueError(f"kind {self.name!r}: labels must be unique and not blank")
            object.__setattr__(self, "labels", labels)

    @property
    def needs_judge(self) -> bool:
        """Whether the evaluator asks a judge: it then stays on the main event loop."""
        return "judge" in self.needs

    @property
    def labelled(self) -> bool:
        """Whether the judge gives each attempt one of `labels` (which people can give too)."""
        return bool(self.labels)

    def labels_of(self, params: P) -> tuple[str, ...]:
        """The labels the judge may give an attempt under a criterion with `params`."""
        return tuple(self.labels(params)) if callable(self.labels) else self.labels

    def files_of(self, params: P) -> tuple[str, ...]:
        """The project files a criterion with `params` reads, relative to project.yaml."""
        return () if self.files is None else tuple(self.files(params))

    async def evaluate(
        self, case: Case, evidence: Evidence, *, params: BaseModel, ctx: CriterionContext
    ) -> Verdict:
        """Validate the fields of `params` against `params_model` again and run the evaluator.

        Always, also for an instance of `params_model` itself: one built with
        `model_construct` or changed after validation carries fields that were never
        checked, and the evaluator must get a valid instance of its own model. (A
        registry skips this for the instances its own `validate` made: see
        `CriterionRegistry.evaluate`.)

        Raises:
            pydantic.ValidationError: `params` does not validate against `params_model`.
        """
        fields = params.model_dump(round_trip=True, warnings=False)
        typed = self.params_model.model_validate(fields, by_alias=False, by_name=True)
        return await self.evaluator(case, evidence, params=typed, ctx=ctx)


def criterion(
    name: str,
    params_model: type[P],
    *,
    version: str = "1",
    needs: Iterable[Need] = NEEDS,
    summary: str = "",
    example: Mapping[str, Any] | None = None,
    labels: tuple[str, ...] | Callable[[P], Sequence[str]] = (),
    files: Callable[[P], Sequence[str]] | None = None,
    prepare: Prepare | None = None,
) -> Callable[[Evaluator[P]], Builtin[P]]:
    """Make the decorated evaluator a `Builtin` kind with these traits (see `Builtin`).

    The decorated name is then the kind, not the function: a family module or a hooks
    module lists it as it is (`CRITERIA = [disclaimer]`), and its evaluator is
    `disclaimer.evaluator`.

        @criterion("reply.max_length", MaxLengthParams, needs=(), summary="...")
        async def max_length(case, evidence, *, params, ctx) -> Verdict: ...
    """

    def make(evaluator: Evaluator[P]) -> Builtin[P]:
        return Builtin(
            name,
            params_model,
            evaluator,
            version,
            needs=frozenset(needs),
            summary=summary,
            example=dict(example or {}),
            labels=labels,
            files=files,
            prepare=prepare,
        )

    return make


@dataclass(frozen=True)
class _Evaluate:
    """The evaluator of a kind that is not a `Builtin`: its own `evaluate`."""

    kind: CriterionKind

    async def __call__(
        self, case: Case, evidence: Evidence, *, params: BaseModel, ctx: CriterionContext
    ) -> Verdict:
        return await self.kind.evaluate(case, evidence, params=params, ctx=ctx)


def described(kind: CriterionKind) -> Builtin[Any]:
    """`kind` with every trait a caller reads: a `Builtin` as it is, any other kind with
    the safe defaults, which are taken here and nowhere else.

    A kind that has only the seed's protocol (`name`, `params_model`, `evaluate`) says
    nothing about itself, so it needs every service (graded on the main process), has the
    version "" in its verdicts, no judge labels and no files.
    """
    if isinstance(kind, Builtin):
        return kind
    return Builtin(kind.name, kind.params_model, _Evaluate(kind), version="")
