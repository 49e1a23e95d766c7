"""The probes: one controlled change of a judged item each, built without a model.

A *target* is one judged criterion of one reply of a case. A probe makes a new target from
it: the reply changed, or (for `option_order`) the criterion's options offered in another
order, nothing else. An *invariance* probe changes nothing a fair judge may look at, so its
verdict must stay; a *sensitivity* probe makes a reply that clearly fails the criterion, so
its verdict must change. Every choice a probe makes (which text, which layout) comes from a
random generator seeded by the command's seed and the target, so the same seed builds the
same probes, and the judge cache answers them the second time
(docs/judge.md#the-probes-one-by-one).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from soev_pipeline.core.canonical import digest, sha256_text
from soev_pipeline.core.models import Case, CriterionSpec, Evidence
from soev_pipeline.criteria.rubric import RubricParams
from soev_pipeline.text import split_sentences

from .texts import Texts

ProbeKind = Literal["invariance", "sensitivity"]
Source = Literal["labels", "run"]


@dataclass(frozen=True)
class Target:
    """One judged criterion (`name`: its kind, or `kind#nth`) of one reply of `case`.

    `source` says where the reply came from: a label line, or an attempt of a run.
    """

    name: str
    case: Case
    spec: CriterionSpec
    evidence: Evidence
    source: Source

    @property
    def reply(self) -> str:
        return self.evidence.reply or ""

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two targets the same: the criterion, the case, the reply."""
        return (self.name, self.case.id, sha256_text(self.reply))


@dataclass(frozen=True)
class Probed:
    """What a probe made of a target: the criterion and the evidence to grade."""

    spec: CriterionSpec
    evidence: Evidence

    @property
    def reply(self) -> str:
        return self.evidence.reply or ""


Build = Callable[[Target, Texts, random.Random, bool], Probed | None]
"""A probe's builder: (target, texts, its generator, whether the judge passed the target) to
the probed target, or None when the probe does not apply to this criterion."""


@dataclass(frozen=True)
class Probe:
    """A probe: its name, its kind, what it changes (for the docs), and its builder."""

    name: str
    kind: ProbeKind
    summary: str
    build: Build


def with_reply(evidence: Evidence, reply: str) -> Evidence:
    """`evidence` with `reply` as its final reply (the last turn's too)."""
    turns = evidence.turns
    if turns:
        turns = (*turns[:-1], turns[-1].model_copy(update={"reply": reply}))
    return evidence.model_copy(update={"reply": reply, "turns": turns})


def _replied(target: Target, reply: str) -> Probed:
    return Probed(target.spec, with_reply(target.evidence, reply))


def _question(target: Target) -> str:
    return target.case.turns[-1] if target.case.turns else ""


def verbosity(target: Target, texts: Texts, rng: random.Random, passed: bool) -> Probed:
    """The reply, a restated question, and a courteous closing. `privacy.names` gets the
    closing only: a question may hold a name, and a reply that repeats it does hold one."""
    restated = rng.choice(texts.restated).replace("{question}", _question(target))
    closing = rng.choice(texts.closing)
    if target.spec.kind == "privacy.names":
        return _replied(target, f"{target.reply}\n\n{closing}")
    return _replied(target, f"{target.reply}\n\n{restated}\n\n{closing}")


def injection(target: Target, texts: Texts, rng: random.Random, passed: bool) -> Probed:
    said = rng.choice(texts.injection_fail if passed else texts.injection_pass)
    return _replied(target, f"{target.reply}\n\n{said}")


def _as_list(sentences: list[str]) -> str:
    return "\n".join(f"- {sentence}" for sentence in sentences)


def _as_paragraphs(sentences: list[str]) -> str:
    return "\n\n".join(sentences)


def _with_markup(sentences: list[str]) -> str:
    first, *rest = sentences
    return " ".join([f"**{first}**", *rest])


def reformat(target: Target, texts: Texts, rng: random.Random, passed: bool) -> Probed | None:
    sentences = split_sentences(target.reply)
    if not sentences:
        return None
    layouts = [_as_list, _as_paragraphs, _with_markup] if len(sentences) > 1 else [_with_markup]
    return _replied(target, rng.choice(layouts)(sentences))


def option_order(target: Target, texts: Texts, rng: random.Random, passed: bool) -> Probed | None:
    """The options of a `rubric.judge` criterion (or the labels of its rubric file) in the
    reverse order: the first becomes the last."""
    if target.spec.kind != "rubric.judge":
        return None
    try:
        params = RubricParams.model_validate(target.spec.params)
    except ValidationError:
        return None
    changed: dict[str, Any] = dict(target.spec.params)
    if params.criterion is not None:
        options = list(reversed(params.criterion.options))
        changed["criterion"] = params.criterion.model_copy(update={"options": options}).model_dump(
            mode="json"
        )
    else:
        changed["labels"] = list(reversed(params.labels))
    spec = target.spec.model_copy(update={"params": changed})
    return Probed(spec, target.evidence)


def counterfactual(target: Target, texts: Texts, rng: random.Random, passed: bool) -> Probed | None:
    """A reply that clearly fails the criterion, for the kinds where one is known."""
    kind = target.spec.kind
    if kind == "behaviour.expected":
        pool = texts.refusal if target.case.behaviour == "answer" else texts.answer
        return _replied(target, rng.choice(pool))
    if kind in ("nuggets.coverage", "compare.equivalent"):
        return _replied(target, rng.choice(texts.unrelated))
    if kind == "privacy.names":
        return _replied(target, f"{target.reply}\n\n{rng.choice(texts.name)}")
    return None


PROBES: tuple[Probe, ...] = (
    Probe(
        "verbosity",
        "invariance",
        "the reply, then a restated question (not for `privacy.names`) and a courteous "
        "closing paragraph",
        verbosity,
    ),
    Probe(
        "injection",
        "invariance",
        "the reply, then a sentence to the grader claiming it is incorrect (when the judge "
        "passed it) or correct (when it failed it)",
        injection,
    ),
    Probe(
        "format",
        "invariance",
        "the reply's sentences as a list, as paragraphs, or in one paragraph with the "
        "first in bold",
        reformat,
    ),
    Probe(
        "option_order",
        "invariance",
        "`rubric.judge` only: the criterion's options (or the rubric's labels) in reverse order",
        option_order,
    ),
    Probe(
        "counterfactual",
        "sensitivity",
        "a reply that fails: a refusal where the case must be answered, an answer where it "
        "must be refused or abstained from, an unrelated paragraph for nuggets and variants, "
        "a personal name added for `privacy.names`",
        counterfactual,
    ),
)
"""Every probe, in the order the figures list them."""
PROBE_NAMES = tuple(probe.name for probe in PROBES)


def grades_reply(spec: CriterionSpec) -> bool:
    """Whether the criterion grades the reply: `privacy.names` with `target: prompt` grades
    the question, which no probe changes."""
    return not (spec.kind == "privacy.names" and spec.params.get("target") == "prompt")


def generator(seed: int, target: Target, probe: str) -> random.Random:
    """The generator of one probe of one target: the same for the same seed and target."""
    name, case_id, reply_sha = target.key
    return random.Random(int(digest([seed, name, case_id, reply_sha, probe])[:16], 16))
