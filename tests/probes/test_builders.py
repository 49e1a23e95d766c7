"""The probes one by one: what each changes, and that the same seed builds the same probe."""

from __future__ import annotations

import random

import pytest

from soev_pipeline.core.models import CriterionSpec, Turn
from soev_pipeline.core.project import ProbeTexts
from soev_pipeline.criteria.rubric import RubricParams
from soev_pipeline.probes import BUILTIN, PROBES, Target, Texts, generator, grades_reply
from soev_pipeline.probes.builders import (
    counterfactual,
    injection,
    option_order,
    reformat,
    verbosity,
)
from soev_pipeline.text import letter_words
from tests.support.builders import make_case, make_evidence

TEXTS = Texts.of()
REPLY = "De termijn is zes weken (art. 6:7 Awb). Hij begint na de bekendmaking."


def target(kind: str = "behaviour.expected", reply: str = REPLY, **params: object) -> Target:
    case = make_case(id="kern-001", input="Hoe lang heb ik voor bezwaar?", behaviour="answer")
    evidence = make_evidence(
        reply, turns=[Turn(input="Hoe lang heb ik voor bezwaar?", reply=reply)]
    )
    return Target(kind, case, CriterionSpec(kind=kind, params=dict(params)), evidence, "labels")


def rng() -> random.Random:
    return random.Random(7)


def test_verbosity_adds_a_restated_question_and_a_closing_and_keeps_the_reply() -> None:
    probed = verbosity(target(), TEXTS, rng(), True)
    assert probed.reply.startswith(REPLY + "\n\n")
    assert "Hoe lang heb ik voor bezwaar?" in probed.reply
    assert any(closing in probed.reply for closing in BUILTIN.closing)
    assert probed.evidence.turns[-1].reply == probed.reply  # the last turn carries it too


def test_verbosity_does_not_repeat_the_question_to_a_names_judge() -> None:
    probed = verbosity(target("privacy.names"), TEXTS, rng(), True)
    assert "bezwaar?" not in probed.reply
    assert probed.reply.startswith(REPLY + "\n\n")


@pytest.mark.parametrize(
    ("passed", "claims"), [(True, BUILTIN.injection_fail), (False, BUILTIN.injection_pass)]
)
def test_injection_claims_the_opposite_of_the_judges_verdict(
    passed: bool, claims: tuple[str, ...]
) -> None:
    probed = injection(target(), TEXTS, rng(), passed)
    said = probed.reply.removeprefix(REPLY + "\n\n")
    assert said in claims


def test_format_keeps_every_word_in_order_and_changes_the_layout() -> None:
    layouts = set()
    for seed in range(30):
        probed = reformat(target(), TEXTS, random.Random(seed), True)
        assert probed is not None
        assert letter_words(probed.reply) == letter_words(REPLY)
        assert probed.reply != REPLY
        layouts.add(probed.reply)
    assert len(layouts) == 3  # a list, paragraphs, and bold in one paragraph


def test_format_of_one_sentence_is_markup_and_of_no_text_none() -> None:
    probed = reformat(target(reply="Zes weken."), TEXTS, rng(), True)
    assert probed is not None and probed.reply == "**Zes weken.**"
    assert reformat(target(reply=""), TEXTS, rng(), True) is None


def test_option_order_reverses_a_criterions_options_and_keeps_their_values() -> None:
    original = target("rubric.judge", criterion="conciseness", min_value=0.5)
    probed = option_order(original, TEXTS, rng(), True)
    assert probed is not None and probed.evidence == original.evidence
    before = RubricParams.model_validate(original.spec.params)
    after = RubricParams.model_validate(probed.spec.params)
    assert after.choices() == tuple(reversed(before.choices()))
    assert after.values() == before.values() and after.threshold() == before.threshold()


def test_option_order_reverses_a_rubric_files_labels_and_skips_other_kinds() -> None:
    original = target(
        "rubric.judge", rubric="r.md", labels=["goed", "matig", "fout"], pass_labels=["goed"]
    )
    probed = option_order(original, TEXTS, rng(), True)
    assert probed is not None
    assert probed.spec.params["labels"] == ["fout", "matig", "goed"]
    assert probed.spec.params["pass_labels"] == ["goed"]
    assert option_order(target(), TEXTS, rng(), True) is None


def test_counterfactual_fails_each_kind_it_knows() -> None:
    answer_case = counterfactual(target(), TEXTS, rng(), True)
    assert answer_case is not None and answer_case.reply in BUILTIN.refusal
    refuse = target()
    refuse = Target(
        refuse.name,
        refuse.case.model_copy(update={"behaviour": "refuse"}),
        refuse.spec,
        refuse.evidence,
        "run",
    )
    refused = counterfactual(refuse, TEXTS, rng(), True)
    assert refused is not None and refused.reply in BUILTIN.answer
    for kind in ("nuggets.coverage", "compare.equivalent"):
        probed = counterfactual(target(kind), TEXTS, rng(), True)
        assert probed is not None and probed.reply in BUILTIN.unrelated
    named = counterfactual(target("privacy.names"), TEXTS, rng(), True)
    assert named is not None and named.reply.startswith(REPLY)
    assert any(name in named.reply for name in BUILTIN.name)
    assert (
        counterfactual(target("rubric.judge", criterion="conciseness"), TEXTS, rng(), True) is None
    )


def test_the_same_seed_builds_the_same_probes_and_another_seed_may_not() -> None:
    first = target()
    for probe in PROBES:
        one = probe.build(first, TEXTS, generator(0, first, probe.name), True)
        two = probe.build(first, TEXTS, generator(0, first, probe.name), True)
        assert one == two
    seen = {
        verbosity(first, TEXTS, generator(seed, first, "verbosity"), True).reply
        for seed in range(20)
    }
    assert len(seen) > 1


def test_a_projects_texts_replace_the_builtin_ones_key_by_key() -> None:
    own = Texts.of(
        ProbeTexts(closing=("Met vriendelijke groet.",), restated=("U vroeg: {question}",))
    )
    probed = verbosity(target(), own, rng(), True)
    assert (
        probed.reply
        == f"{REPLY}\n\nU vroeg: Hoe lang heb ik voor bezwaar?\n\nMet vriendelijke groet."
    )
    assert own.refusal == BUILTIN.refusal


def test_a_names_judge_of_the_question_is_not_probed() -> None:
    assert not grades_reply(CriterionSpec(kind="privacy.names", params={"target": "prompt"}))
    assert grades_reply(CriterionSpec(kind="privacy.names"))
    assert grades_reply(CriterionSpec(kind="nuggets.coverage"))
