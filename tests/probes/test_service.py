"""Probing with judges of engineered biases, one per probe: each bias is found, an unbiased
judge is flagged for none, an insensitive one is caught, and judge errors are kept apart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from soev_pipeline.calibration.judging import evidence_of
from soev_pipeline.core import JudgeError, JudgeRequest
from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.models import CriterionSpec
from soev_pipeline.judges import load_prompts
from soev_pipeline.probes import PROBE_NAMES, CriterionProbes, Target, Texts, probe_targets
from soev_pipeline.probes.results import ProbeReport
from soev_pipeline.project import LoadedProject
from tests.support.builders import ScriptedJudge, label

ANSWERS = [f"De bezwaartermijn is zes weken, zegt regel {n}." for n in range(6)]


def biased(bias: str | None) -> ScriptedJudge:
    """A judge that is fair but for `bias`: the probe of that name should find it."""

    def answer(request: JudgeRequest) -> Any:
        reply = str(request.inputs.get("reply", ""))
        if request.task == "behaviour.expected":
            if bias == "insensitive":
                return label("answer")
            if bias == "verbosity" and len(reply) > 150:
                return label("abstain")
            if bias == "injection" and ("evaluator" in reply or "grader" in reply):
                obeyed = "wrong" in reply or "does not meet" in reply
                return label("refuse" if obeyed else "answer")
            if bias == "format" and "**" in reply:
                return label("abstain")
            if bias == "errors" and ("evaluator" in reply or "grader" in reply):
                return JudgeError("judge call failed: HTTP 500")
            return label("refuse" if "cannot" in reply or "not able" in reply else "answer")
        if request.task == "rubric.judge":
            labels = request.inputs["labels"]
            assert isinstance(labels, list)
            if bias == "option_order":
                return label(str(labels[0]))
            return label("goed" if "zes weken" in reply else "fout")
        if request.task == "nuggets.coverage":
            return label("support" if "zes weken" in reply else "not_support")
        return label(request.allowed_labels[0])

    return ScriptedJudge(answer)


def targets(loaded: LoadedProject, replies: list[str] = ANSWERS) -> dict[str, list[Target]]:
    """Each judged criterion of kern-001 (an answer case) over `replies`."""
    case = next(case for case in loaded.cases() if case.id == "kern-001")
    specs = {
        "behaviour.expected": CriterionSpec(kind="behaviour.expected"),
        **{
            spec.kind: spec
            for spec in case.criteria
            if spec.kind in ("nuggets.coverage", "rubric.judge")
        },
    }
    return {
        name: [Target(name, case, spec, evidence_of(case, reply), "labels") for reply in replies]
        for name, spec in specs.items()
    }


def probe(
    loaded: LoadedProject, judge: ScriptedJudge, replies: list[str] = ANSWERS
) -> dict[str, CriterionProbes]:
    found, _ = asyncio.run(
        probe_targets(
            loaded, targets(loaded, replies), judge, load_prompts(), seed=0, texts=Texts.of()
        )
    )
    return found


def test_a_fair_judge_shows_no_bias_and_is_sensitive(loaded: LoadedProject) -> None:
    found = probe(loaded, biased(None))
    assert list(found) == ["behaviour.expected", "nuggets.coverage", "rubric.judge"]
    for name, criterion in found.items():
        assert criterion.biases(0.05) == [], name
        assert criterion.insensitive(0.05) == [], name
        invariance = [f for f in criterion.probes.values() if f.kind == "invariance"]
        assert all(f.items == 6 and f.flipped == 0 for f in invariance)
    assert list(found["rubric.judge"].probes) == [
        "verbosity",
        "injection",
        "format",
        "option_order",
    ]
    assert list(found["behaviour.expected"].probes) == [
        "verbosity",
        "injection",
        "format",
        "counterfactual",
    ]
    sensitivity = found["nuggets.coverage"].probes["counterfactual"]
    assert (sensitivity.items, sensitivity.flipped, sensitivity.to_fail) == (6, 6, 6)
    prompt = load_prompts()["behaviour.expected"]
    assert found["behaviour.expected"].prompt_sha256 == {"behaviour.expected": sha256_text(prompt)}
    assert "rubrics/termijn.md" in found["rubric.judge"].prompt_sha256


@pytest.mark.parametrize(
    ("bias", "criterion"),
    [
        ("verbosity", "behaviour.expected"),
        ("injection", "behaviour.expected"),
        ("format", "behaviour.expected"),
        ("option_order", "rubric.judge"),
    ],
)
def test_each_engineered_bias_is_found_by_its_probe_and_no_other(
    loaded: LoadedProject, bias: str, criterion: str
) -> None:
    found = probe(loaded, biased(bias))
    assert found[criterion].biases(0.05) == [bias]
    figures = found[criterion].probes[bias]
    assert (figures.items, figures.flipped, figures.to_fail, figures.to_pass) == (6, 6, 6, 0)
    assert figures.flip_ci95 is not None and figures.flip_ci95[0] > 0.5
    others = {name: c.biases(0.05) for name, c in found.items() if name != criterion}
    assert others == {name: [] for name in others}


def test_a_judge_that_ignores_the_reply_is_not_sensitive(loaded: LoadedProject) -> None:
    found = probe(loaded, biased("insensitive"))
    behaviour = found["behaviour.expected"]
    assert behaviour.insensitive(0.05) == ["counterfactual"]
    assert behaviour.probes["counterfactual"].flipped == 0
    report = ProbeReport(criteria=found, judge_calls=None, cache_hits=None)
    assert report.gate_failures(0.05) == {"behaviour.expected": "counterfactual flips only 0 %"}


def test_an_injection_that_flips_a_failed_reply_counts_to_pass(loaded: LoadedProject) -> None:
    failing = [f"Ik weet het niet, zegt regel {n}." for n in range(4)]
    found = probe(loaded, biased("injection"), failing)
    # the judge labels these `answer`, so behaviour.expected passes them: the probe says "wrong"
    assert found["behaviour.expected"].probes["injection"].to_fail == 4
    nuggets = found["nuggets.coverage"]
    # nuggets fail them, so the probe claims they are correct; a fair nuggets judge keeps failing
    assert nuggets.probes["injection"].flipped == 0
    # a reply the judge failed cannot be made to fail: no counterfactual is built for it
    assert "counterfactual" not in nuggets.probes


def test_judge_errors_are_kept_apart_and_an_erring_item_is_not_probed(
    loaded: LoadedProject,
) -> None:
    judge = biased("errors")
    found = probe(loaded, judge)
    injection = found["behaviour.expected"].probes["injection"]
    assert (injection.items, injection.judge_errors, injection.flip_rate) == (0, 6, None)
    assert found["behaviour.expected"].probes["verbosity"].judge_errors == 0

    def original_fails(request: JudgeRequest) -> Any:
        return JudgeError("judge call failed: HTTP 500")

    erring = ScriptedJudge(original_fails)
    found = probe(loaded, erring)
    assert all(
        f.judge_errors == 6 and f.items == 0 for f in found["behaviour.expected"].probes.values()
    )
    # each of the 6 replies was asked once per judged criterion (nuggets: one per nugget)
    assert len(erring.requests) == 6 * (1 + 2 + 1)


def test_the_figures_count_every_probe_in_the_order_of_the_probes(loaded: LoadedProject) -> None:
    found = probe(loaded, biased(None))
    for criterion in found.values():
        order = [PROBE_NAMES.index(name) for name in criterion.probes]
        assert order == sorted(order)
    data = ProbeReport(criteria=found, judge_calls=3, cache_hits=4).to_json()
    assert list(data) == ["criteria", "judge_calls", "cache_hits"]
    assert list(data["criteria"]["behaviour.expected"]) == ["prompt_sha256", "probes"]
    assert list(data["criteria"]["behaviour.expected"]["probes"]["verbosity"]) == [
        "kind",
        "items",
        "flipped",
        "to_pass",
        "to_fail",
        "judge_errors",
        "flip_rate",
        "flip_ci95",
    ]
