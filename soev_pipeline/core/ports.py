"""The ports of the core: what a run needs from the outside, as protocols.

The built-in implementations live in `soev_pipeline.judges` (judge, language detector) and
`soev_pipeline.arms` (systems under test); a project may give its own through a runtime
provider or its hooks module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, JsonValue

from .errors import LanguageDetectionError
from .models import Case, Evidence, FrozenModel


class JudgeRequest(FrozenModel):
    """A question for the judge: the task, its inputs, and the labels it may answer with.

    `context_prefix` goes before the task's prompt in the system message (for example a
    long shared context); a judge refuses it when it does not fit the model's window.
    A request whose `inputs` hold a `rubric` text records that text's hash in the verdict.
    """

    task: str = Field(min_length=1)
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    allowed_labels: tuple[str, ...] = Field(min_length=1)
    context_prefix: str = ""


class JudgeResult(FrozenModel):
    """The judge's answer: one of the allowed labels and why.

    `model`, `prompt_sha` and `cached` say what answered: the judge model, the SHA-256 of
    the task's prompt, and whether the answer came from the judge cache.
    """

    label: str
    detail: str = ""
    model: str | None = None
    prompt_sha: str | None = None
    cached: bool = False


@runtime_checkable
class Judge(Protocol):
    """Gives a label to a request, or raises `JudgeError`."""

    async def judge(self, request: JudgeRequest) -> JudgeResult: ...


@runtime_checkable
class ReportsStats(Protocol):
    """A judge that counts what it did (requests, model calls, cache hits, failures).

    Optional: a grading puts the counts of such a judge in its scoring summary, and skips
    a judge without them.
    """

    def stats_dict(self) -> Mapping[str, object]: ...


@runtime_checkable
class LanguageDetector(Protocol):
    """Returns the ISO 639-1 code of one sentence, or raises `LanguageDetectionError`."""

    def detect(self, text: str) -> str: ...


@runtime_checkable
class KnowsLanguages(Protocol):
    """A language detector that can say which languages it can detect at all.

    Optional: `reply.language` then refuses a language the detector cannot detect with an
    error verdict, instead of failing every reply.
    """

    @property
    def languages(self) -> frozenset[str]: ...


@runtime_checkable
class DetectsMany(Protocol):
    """A language detector that answers for many sentences in one call.

    Optional: `reply.language` then asks for all the sentences of a reply at once, each
    answered with its code or the `LanguageDetectionError` that `detect` would raise.
    """

    def detect_many(self, texts: Sequence[str]) -> list[str | LanguageDetectionError]: ...


@runtime_checkable
class Arm(Protocol):
    """The system under test: runs one attempt of a case and returns its evidence.

    An attempt plays the case's turns in one conversation, and then each of the case's
    `variants` (paraphrases of the first turn) in a conversation of its own, recording them
    in `Evidence.variants` in the order of `case.variants`: criteria such as
    `compare.equivalent` and `compare.same_citations` grade a case's variants from the same
    attempt as its base case. `fields` are the case setup's extra input fields, merged into
    the first turn's input (of the variants too). An arm records failures in the evidence;
    it raises only when it cannot run at all. The run sets `refusal_code` afterwards, so an
    arm may leave it None.
    """

    async def attempt(
        self, case: Case, *, attempt: int, fields: Mapping[str, JsonValue]
    ) -> Evidence: ...


@runtime_checkable
class CaseSetup(Protocol):
    """The fixtures of each case: an async context manager around every attempt.

    It yields the extra input fields of the case (for example `knowledge` or `documents`)
    and may release what it made when the attempt ends.
    """

    def __call__(self, case: Case) -> AbstractAsyncContextManager[Mapping[str, JsonValue]]: ...


@runtime_checkable
class Tracker(Protocol):
    """Where a finished run is also published, for example an experiment tracker.

    It gets the manifest and the public report (aggregates, and dev cases only).
    """

    async def publish(self, *, manifest: Mapping[str, Any], report: Mapping[str, Any]) -> None: ...


class QuoteFinder(Protocol):
    """Finds the corpus unit that holds a quoted span."""

    def find(self, quote: str) -> str | None: ...


@runtime_checkable
class Corpus(Protocol):
    """The corpus lookup as the criteria use it: unit ids, and indexes built once.

    `soev_pipeline.corpus.CorpusLookup` is the implementation; the core names only what
    the criteria ask of it, so that it does not depend on the corpus package.
    """

    def __contains__(self, unit_id: object) -> bool: ...

    def quote_index(self) -> QuoteFinder: ...

    def mention_index(self) -> Any: ...

    def warm(self) -> None:
        """Build the indexes now, so the first criterion that needs one does not wait."""
        ...

    def drop_indexes(self) -> None:
        """Let the indexes go (a grading is over); the next use builds them again."""
        ...


@dataclass(frozen=True)
class CriterionContext:
    """What a criterion gets besides the case and the evidence.

    The project gives the messages, the rubric texts by path and the corpus lookup; a
    runtime gives the judge and the language detector. A service that is not configured
    is None, and a criterion that needs it returns a verdict with the status error.
    """

    messages: Mapping[str, str] = field(default_factory=dict)
    rubrics: Mapping[str, str] = field(default_factory=dict)
    corpus: Corpus | None = None
    judge: Judge | None = None
    language_detector: LanguageDetector | None = None
