"""Rules on the text of the final reply: its language, what it holds, its length."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import cast

from pydantic import Field, field_validator

from soev_pipeline.core.errors import LanguageDetectionError
from soev_pipeline.core.models import Case, Evidence, FrozenModel, Verdict
from soev_pipeline.core.patterns import LinearPattern, PatternError
from soev_pipeline.core.ports import (
    CriterionContext,
    DetectsMany,
    KnowsLanguages,
    LanguageDetector,
)
from soev_pipeline.text import letter_words, shorten, split_sentences

from .kind import criterion
from .verdicts import error, not_applicable, outcome

MIN_WORDS = 3
"""A sentence with fewer words of letters than this gives no evidence of its language."""

_SHOWN = 3
_SHORTEN = 60
_NO_PATTERNS = "no patterns: the criterion has no substrings and no regex"


class LanguageParams(FrozenModel):
    """`language`: the ISO 639-1 code the reply must be in; `min_share`: the share needed."""

    language: str = Field(pattern=r"^[a-z]{2}$")
    min_share: float = Field(default=1.0, ge=0.0, le=1.0)


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str, *, case_sensitive: bool) -> LinearPattern:
    """The RE2 pattern of a `regex` parameter, compiled once per process.

    RE2 (`core.patterns`) matches in time linear in the reply: no pattern a suite holds
    can make grading hang on a reply the system chose.

    Raises:
        PatternError: RE2 cannot take the pattern.
    """
    return LinearPattern(pattern, case_sensitive=case_sensitive)


class ContainsParams(FrozenModel):
    """The patterns of `reply.contains` and `reply.not_contains`, both lists empty by default.

    Without patterns both kinds pass: every pattern matches, and none does. An empty
    substring or a regex that RE2 cannot take (one that does not compile, or uses a
    backreference or lookaround) is refused when the project loads, since it is a typo in
    the suite or needs rewriting.
    """

    substrings: tuple[str, ...] = ()
    regex: tuple[str, ...] = ()
    case_sensitive: bool = False

    @field_validator("substrings")
    @classmethod
    def _nonempty_substrings(cls, substrings: tuple[str, ...]) -> tuple[str, ...]:
        if any(not substring for substring in substrings):
            raise ValueError("an empty substring matches every reply")
        return substrings

    @field_validator("regex")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            try:
                compiled(pattern, case_sensitive=True)
            except PatternError as exc:
                raise ValueError(
                    f"invalid regular expression {pattern!r}: {exc} (patterns run on RE2, "
                    "which has no backreferences and no lookaround)"
                ) from None
        return patterns


class MaxLengthParams(FrozenModel):
    """`max`: the most Unicode characters (code points) the reply may have."""

    max: int = Field(ge=0)


Answer = str | LanguageDetectionError
"""What the detector says of a sentence: its language, or why it cannot tell."""


class _Detected:
    """The countable sentences of the replies of a chunk of attempts, and the detector's
    answers for them, found for all of them at once (`prepare`) before each reply is
    graded: one call of the detector for the chunk costs less than one for each reply.

    It holds the last chunk only, for the detector that answered: a reply that is not in
    it, or a criterion graded with another detector, is detected on its own.
    """

    def __init__(self) -> None:
        self.detector: LanguageDetector | None = None
        self.replies: dict[str, tuple[list[str], int, list[Answer]]] = {}

    def found(self, detector: LanguageDetector, reply: str) -> tuple[list[str], int, list[Answer]]:
        """The countable sentences of `reply`, how many others it has, and the answers."""
        known = self.replies.get(reply) if detector is self.detector else None
        if known is not None:
            return known
        sentences, skipped = _countable(reply)
        return sentences, skipped, _detect(detector, sentences)

    def prepare(self, evidence: Sequence[Evidence], ctx: CriterionContext) -> None:
        """Split the replies of `evidence` and detect all their sentences in one call."""
        self.detector, self.replies = None, {}
        detector = ctx.language_detector
        if detector is None or not _capabilities(detector)[1]:
            return
        split = {item.reply: _countable(item.reply) for item in evidence if item.reply is not None}
        sentences = list(dict.fromkeys(s for found, _ in split.values() for s in found))
        answers = dict(zip(sentences, _detect(detector, sentences), strict=True))
        self.replies = {
            reply: (found, skipped, [answers[sentence] for sentence in found])
            for reply, (found, skipped) in split.items()
        }
        self.detector = detector


_DETECTED = _Detected()


def _countable(reply: str) -> tuple[list[str], int]:
    """The sentences of `reply` with enough words to tell a language, and how many have not."""
    split = split_sentences(reply)
    sentences = [
        sentence for sentence in split if len(letter_words(sentence, MIN_WORDS)) == MIN_WORDS
    ]
    return sentences, len(split) - len(sentences)


def _detect(detector: LanguageDetector, sentences: list[str]) -> list[Answer]:
    if _capabilities(detector)[1]:
        return cast(DetectsMany, detector).detect_many(sentences)
    return [_answer(detector, sentence) for sentence in sentences]


@criterion(
    "reply.language",
    LanguageParams,
    needs={"language_detector"},
    summary="at least `min_share` of the reply's detectable sentences are in `language`",
    example={"kind": "reply.language", "language": "nl", "min_share": 0.9},
    prepare=_DETECTED.prepare,
)
async def language(
    case: Case, evidence: Evidence, *, params: LanguageParams, ctx: CriterionContext
) -> Verdict:
    """Pass when at least `min_share` of the detectable sentences are in `language`.

    A sentence with fewer than three words of letters, or one the detector finds no
    language in (numbers, identifiers, citations), does not count either way.
    """
    if evidence.reply is None:
        return error("no reply")
    detector = ctx.language_detector
    if detector is None:
        return error("no language detector is configured")
    if (
        _capabilities(detector)[0]
        and params.language not in cast(KnowsLanguages, detector).languages
    ):
        return error(f"the language detector cannot detect {params.language!r}")
    sentences, skipped, answers = _DETECTED.found(detector, evidence.reply)
    detected: list[tuple[str, str]] = []
    for sentence, answer in zip(sentences, answers, strict=True):
        if isinstance(answer, LanguageDetectionError):
            skipped += 1
        else:
            detected.append((sentence, answer))
    if not detected:
        return not_applicable(
            f"no sentence of the reply has {MIN_WORDS} or more words to detect a language in"
            f" ({skipped} too short or not language)"
        )
    others = [(sentence, code) for sentence, code in detected if code != params.language]
    inside = len(detected) - len(others)
    share = inside / len(detected)
    detail = f"{inside}/{len(detected)} sentences in {params.language} ({share:.2f})"
    if skipped:
        detail += f"; {skipped} not counted"
    if others:
        shown = "; ".join(
            f"[{code}] {shorten(sentence, _SHORTEN)!r}" for sentence, code in others[:_SHOWN]
        )
        more = f" and {len(others) - _SHOWN} more" if len(others) > _SHOWN else ""
        detail += f"; not {params.language}: {shown}{more}"
    return outcome(passed=share >= params.min_share, detail=detail)


_CAPABILITIES: dict[type, tuple[bool, bool]] = {}


def _capabilities(detector: LanguageDetector) -> tuple[bool, bool]:
    """Whether `detector` knows its languages and detects many sentences at once, asked
    once per type of detector: a runtime protocol check costs as much as grading a short
    reply."""
    kind = type(detector)
    found = _CAPABILITIES.get(kind)
    if found is None:
        found = isinstance(detector, KnowsLanguages), isinstance(detector, DetectsMany)
        _CAPABILITIES[kind] = found
    return found


def _answer(detector: LanguageDetector, sentence: str) -> str | LanguageDetectionError:
    try:
        return detector.detect(sentence)
    except LanguageDetectionError as exc:
        return exc


@criterion(
    "reply.contains",
    ContainsParams,
    needs=(),
    summary="each substring and each regex matches the reply (so also without patterns)",
    example={"kind": "reply.contains", "substrings": ["zes weken"]},
)
async def contains(
    case: Case, evidence: Evidence, *, params: ContainsParams, ctx: CriterionContext
) -> Verdict:
    """Pass when every substring and every regex matches the reply (so also without any)."""
    if evidence.reply is None:
        return error("no reply")
    if not params.substrings and not params.regex:
        return outcome(passed=True, detail=_NO_PATTERNS)
    try:
        matched, missed = _match(evidence.reply, params)
    except _Unmatchable as exc:
        return error(str(exc))
    if missed:
        total = len(matched) + len(missed)
        return outcome(
            passed=False, detail=f"{len(missed)} of {total} missing: {', '.join(missed)}"
        )
    return outcome(passed=True, detail=f"all {len(matched)} pattern(s) matched")


@criterion(
    "reply.not_contains",
    ContainsParams,
    needs=(),
    summary="no substring and no regex matches the reply (so also without patterns)",
    example={"kind": "reply.not_contains", "regex": [r"\bgegarandeerd\b"]},
)
async def not_contains(
    case: Case, evidence: Evidence, *, params: ContainsParams, ctx: CriterionContext
) -> Verdict:
    """Pass when no substring and no regex matches the reply (so also without any)."""
    if evidence.reply is None:
        return error("no reply")
    if not params.substrings and not params.regex:
        return outcome(passed=True, detail=_NO_PATTERNS)
    try:
        matched, missed = _match(evidence.reply, params)
    except _Unmatchable as exc:
        return error(str(exc))
    if matched:
        total = len(matched) + len(missed)
        return outcome(
            passed=False, detail=f"{len(matched)} of {total} found: {', '.join(matched)}"
        )
    return outcome(passed=True, detail=f"none of {len(missed)} pattern(s) matched")


@criterion(
    "reply.max_length",
    MaxLengthParams,
    needs=(),
    summary="the reply has at most `max` Unicode characters",
    example={"kind": "reply.max_length", "max": 1200},
)
async def max_length(
    case: Case, evidence: Evidence, *, params: MaxLengthParams, ctx: CriterionContext
) -> Verdict:
    """Pass when the reply has at most `max` Unicode code points."""
    if evidence.reply is None:
        return error("no reply")
    length = len(evidence.reply)
    return outcome(passed=length <= params.max, detail=f"{length} characters (max {params.max})")


class _Unmatchable(Exception):
    """A regex that cannot run on this reply; the criterion's verdict is an error."""


def _match(reply: str, params: ContainsParams) -> tuple[list[str], list[str]]:
    """Split the patterns of `params` into those that match `reply` and those that miss.

    Raises:
        _Unmatchable: a regex could not be compiled or run; the message names it.
    """
    matched: list[str] = []
    missed: list[str] = []
    folded = reply if params.case_sensitive else reply.casefold()
    for substring in params.substrings:
        needle = substring if params.case_sensitive else substring.casefold()
        (matched if needle in folded else missed).append(f"substring {substring!r}")
    for pattern in params.regex:
        try:
            found = compiled(pattern, case_sensitive=params.case_sensitive).search(reply)
        except (PatternError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise _Unmatchable(
                f"regex {pattern!r} could not run ({type(exc).__name__}: {exc})"
            ) from None
        (matched if found else missed).append(f"regex {pattern!r}")
    return matched, missed
