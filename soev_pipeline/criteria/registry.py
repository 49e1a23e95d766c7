"""The registry of criterion kinds: it validates parameters once and evaluates them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.errors import (
    CriterionParamsError,
    DuplicateCriterionError,
    JudgeError,
    UnknownCriterionError,
)
from soev_pipeline.core.models import Case, CriterionSpec, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext, Judge, JudgeRequest, JudgeResult

from .kind import Builtin, CriterionKind, Need, described
from .verdicts import completed, error


class _RecordingJudge:
    """Wraps the context's judge for one criterion and remembers what answered.

    It also remembers an exception other than `JudgeError` from the judge: the judge's
    contract is that such an exception stops the run, so the registry raises it again
    instead of turning it into an error verdict.
    """

    def __init__(self, inner: Judge) -> None:
        self._inner = inner
        self.model: str | None = None
        self.prompt_sha: str | None = None
        self.rubric_sha: str | None = None
        self.crashed: Exception | None = None

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        rubric = request.inputs.get("rubric")
        if isinstance(rubric, str):
            self.rubric_sha = sha256_text(rubric)
        try:
            result = await self._inner.judge(request)
        except JudgeError:
            raise
        except Exception as exc:
            self.crashed = self.crashed or exc
            raise
        if isinstance(result, JudgeResult):
            self.model = result.model or self.model
            self.prompt_sha = result.prompt_sha or self.prompt_sha
        return result


def _close_matches(name: str, names: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


def _fields(params: BaseModel) -> tuple[Any, ...]:
    """The field values of `params`, to see later whether one was replaced."""
    return tuple(params.__dict__.values())


class CriterionRegistry:
    """The criterion kinds a project can use, by name.

    Each name is unique: registering a second kind of the same name raises
    `DuplicateCriterionError`. Every kind is held as a `Builtin`, so a caller reads a
    kind's traits from it; a kind that is not one gets the defaults of `described`.

    The registry remembers the parameters its `validate` made, with
    their field values, so that `evaluate` can hand them to the evaluator without
    validating them again: a project's parameters are validated once, at load, rather
    than for every attempt, where validating cost as much as grading the cheaper kinds.
    """

    def __init__(self, kinds: Iterable[CriterionKind] = ()) -> None:
        self._kinds: dict[str, Builtin[Any]] = {}
        self._validated: dict[int, tuple[BaseModel, Builtin[Any], tuple[Any, ...]]] = {}
        self._fields: dict[tuple[str, float, bool], dict[str, Any]] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: CriterionKind) -> None:
        """Add `kind`, with the default traits of `described` when it is not a `Builtin`.

        Raises:
            TypeError: `kind` lacks the `CriterionKind` protocol.
            DuplicateCriterionError: its name is taken.
        """
        if not isinstance(kind, CriterionKind):
            raise TypeError(f"{kind!r} is not a criterion kind (name, params_model, evaluate)")
        if kind.name in self._kinds:
            raise DuplicateCriterionError(f"criterion kind {kind.name!r} is already registered")
        self._kinds[kind.name] = described(kind)

    def copy(self) -> CriterionRegistry:
        """Return a new registry with the same kinds, to extend without changing this one."""
        return CriterionRegistry(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._kinds))

    def __len__(self) -> int:
        return len(self._kinds)

    def get(self, name: str) -> Builtin[Any]:
        """Return the kind called `name`. Raises `UnknownCriterionError` with close matches."""
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownCriterionError(
                f"unknown criterion kind {name!r}{_close_matches(name, self._kinds)}"
            ) from None

    def version(self, name: str) -> str:
        """The version of the kind called `name`, which its verdicts record."""
        return self.get(name).version

    def needs(self, name: str) -> frozenset[Need]:
        """The services of the context that the kind called `name` grades with."""
        return self.get(name).needs

    def forkable(self, *, detector_forks: bool) -> frozenset[str]:
        """The names of the kinds that a forked worker process may grade.

        A judge never crosses a fork: it holds an HTTP client and an event loop of the
        parent. The corpus lookup does: it is read-only data, built before the fork.
        `detector_forks` says whether the context's language detector does (the bundled
        one does; a runtime's own may hold what a fork must not share). A kind that does
        not say what it needs needs everything, so it is never forkable.
        """
        crossing: set[Need] = {"corpus", "language_detector"} if detector_forks else {"corpus"}
        return frozenset(name for name, kind in self._kinds.items() if kind.needs <= crossing)

    def prepare(
        self, attempts: Iterable[tuple[CriterionSpec, Evidence]], ctx: CriterionContext
    ) -> None:
        """Let each kind with a `prepare` trait do at once, for the evidence it will grade
        of these (criterion, evidence) pairs, what its evaluator would do for each alone.

        Only a saving of time: a kind's failure here is passed over, since its evaluator
        does the work again and reports what goes wrong as an error verdict.
        """
        grouped: dict[str, list[Evidence]] = {}
        for spec, evidence in attempts:
            kind = self._kinds.get(spec.kind)
            if kind is not None and kind.prepare is not None:
                grouped.setdefault(spec.kind, []).append(evidence)
        for name, items in grouped.items():
            prepare = self._kinds[name].prepare
            assert prepare is not None
            try:
                prepare(items, ctx)
            except Exception:  # the evaluator reports it (see above)
                continue

    def validate(self, spec: CriterionSpec) -> BaseModel:
        """Validate the parameters of `spec` against its kind's parameter model.

        The registry remembers the instance it returns, so that `evaluate` trusts it as
        long as none of its fields is replaced.

        Raises:
            UnknownCriterionError: the registry has no kind `spec.kind`.
            CriterionParamsError: the parameters do not validate; the message names the
                first bad field.
        """
        kind = self.get(spec.kind)
        params = self._params(kind, spec)
        self._validated[id(params)] = (params, kind, _fields(params))
        return params

    @staticmethod
    def _params(kind: Builtin[Any], spec: CriterionSpec) -> BaseModel:
        try:
            params: BaseModel = kind.params_model.model_validate(spec.params)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "parameters"
            raise CriterionParamsError(
                f"criterion {spec.kind!r}: parameter {field!r}: {first['msg']}"
            ) from None
        return params

    def _trusts(self, kind: Builtin[Any], params: BaseModel) -> bool:
        """Whether `params` is an instance that `validate` made for `kind`, unchanged.

        Unchanged means that no field was given another value since (by assignment, or
        by `object.__setattr__` on a frozen model); a list inside a field that is
        changed in place is not seen, which is why parameter models hold tuples.
        """
        entry = self._validated.get(id(params))
        return (
            entry is not None
            and entry[0] is params
            and entry[1] is kind
            and _fields(params) == entry[2]
        )

    async def evaluate(
        self,
        spec: CriterionSpec,
        case: Case,
        evidence: Evidence,
        ctx: CriterionContext,
        params: BaseModel | None = None,
    ) -> Verdict:
        """Grade `evidence` with `spec` and return the verdict with kind, weight and gate:
        `bind(spec, params).evaluate(case, evidence, ctx)` (see `BoundCriterion`).

        Raises:
            UnknownCriterionError: the registry has no kind `spec.kind`.
        """
        return await self.bind(spec, params).evaluate(case, evidence, ctx)

    def bind(self, spec: CriterionSpec, params: BaseModel | None = None) -> BoundCriterion:
        """`spec` ready to grade many attempts: its kind looked up, its parameters checked
        and the fields the registry adds to each verdict made, once.

        `params` are the parameters of `spec` as the caller validated them (None: validate
        them here). The kind's evaluator gets them as they are when this registry's
        `validate` made them and no field has changed since; other parameters go through
        the kind's `evaluate`, which validates them again on each call. Parameters that do
        not validate give every attempt a verdict with the status error.

        Raises:
            UnknownCriterionError: the registry has no kind `spec.kind`.
        """
        kind = self.get(spec.kind)
        refused: Exception | None = None
        if params is None:
            try:
                params, trusted = self._params(kind, spec), True
            except CriterionParamsError as exc:
                refused, trusted = exc, False
        else:
            trusted = self._trusts(kind, params)
        key = (spec.kind, spec.weight, spec.gate)
        fields = self._fields.get(key)
        if fields is None:  # one dict for the many criteria of a suite that share them
            fields = {"kind": spec.kind, "weight": spec.weight, "gate": spec.gate}
            fields = self._fields[key] = {**fields, "version": kind.version}
        return BoundCriterion(kind, params, trusted, refused, fields)


class BoundCriterion:
    """A criterion of a case with its kind and parameters, as `CriterionRegistry.bind`
    makes it: grading binds each criterion once and evaluates it for every attempt."""

    __slots__ = ("_fields", "_kind", "_params", "_refused", "_trusted")

    def __init__(
        self,
        kind: Builtin[Any],
        params: BaseModel | None,
        trusted: bool,
        refused: Exception | None,
        fields: dict[str, Any],
    ) -> None:
        self._kind = kind
        self._params = params
        self._trusted = trusted
        self._refused = refused
        self._fields = fields

    async def evaluate(self, case: Case, evidence: Evidence, ctx: CriterionContext) -> Verdict:
        """Grade `evidence` and return the verdict with kind, weight, gate and version.

        An evaluator that raises gives a verdict with the status error instead, so one
        case never stops a run; the exception is the judge's own when it is not a
        `JudgeError` (a bug in a judge adapter): that one stops the run, as the judge's
        contract says.
        """
        recording = _RecordingJudge(ctx.judge) if ctx.judge is not None else None
        if recording is not None:
            ctx = _with_judge(ctx, recording)
        try:
            if self._refused is not None:
                raise self._refused
            assert self._params is not None
            if self._trusted:
                verdict = await self._kind.evaluator(case, evidence, params=self._params, ctx=ctx)
            else:
                verdict = await self._kind.evaluate(case, evidence, params=self._params, ctx=ctx)
            if not isinstance(verdict, Verdict):
                verdict = error(f"criterion returned {type(verdict).__name__}, not a Verdict")
        except Exception as exc:
            if recording is not None and recording.crashed is not None:
                raise recording.crashed from None
            verdict = error(f"criterion raised {type(exc).__name__}: {exc}")
        if recording is None:
            return completed(verdict, self._fields)
        return completed(
            verdict,
            {
                **self._fields,
                "judge_model": verdict.judge_model or recording.model,
                "prompt_sha": verdict.prompt_sha or recording.prompt_sha,
                "rubric_sha": verdict.rubric_sha or recording.rubric_sha,
            },
        )


def _with_judge(ctx: CriterionContext, judge: Judge) -> CriterionContext:
    return replace(ctx, judge=judge)
