"""The judge through the CLI (docs/judge.md): how the baseline asked it, its cache across
commands, and what a judge that answers garbage gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conformance.conftest import ENVIRONMENT, Baseline
from tests.support.chat_completions import FakeChatCompletions, labels_of
from tests.support.cli import invoke
from tests.support.project import edit_yaml

pytestmark = pytest.mark.e2e


def test_the_judge_is_asked_as_section_9_says(baseline: Baseline) -> None:
    judge = baseline.judge
    assert judge.requests
    for request in judge.requests:
        body = request.json()
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == f"Bearer {ENVIRONMENT['JUDGE_API_KEY']}"
        assert body["model"] == "judge-model"
        assert [message["role"] for message in body["messages"]] == ["system", "user"]
        json.loads(body["messages"][1]["content"])
        assert body["response_format"]["type"] == "json_schema"
        prompt = "\n".join(message["content"] for message in body["messages"])
        for label in labels_of(body):  # the allowed labels, in the prompt and as the enum
            assert label in prompt
    enums = {tuple(labels_of(request.json())) for request in judge.requests}
    assert enums == {
        ("answer", "refuse", "abstain"),  # behaviour.expected of priv-001
        ("support", "partial_support", "not_support"),  # nuggets.coverage of kern-001
        ("goed", "fout"),  # the labels of the rubric of kern-001
    }


def test_a_rescore_answers_the_judge_from_its_cache(baseline: Baseline) -> None:
    assert len(baseline.judge.requests) == baseline.asked[1]
    judge = baseline.report.json()["scoring"]["judge"]
    assert judge["calls"] == 0 and judge["cache_hits"] > 0
    assert baseline.report.json()["criteria"] == baseline.first.json()["criteria"]


def test_a_judge_that_answers_garbage_gives_error_verdicts(
    copy: Path, judge: FakeChatCompletions
) -> None:
    judge.answer = lambda body: "Het antwoord is goed, denk ik."
    edit_yaml(copy, lambda data: data["judge"].update(cache=False))
    result = invoke("run", "--project", copy, "--run-id", "g1", "--split", "dev")
    assert result.status == 0, result.err
    assert judge.requests
    report = invoke("report", "g1", "--json", "--project", copy).json()
    verdicts = {
        case["case_id"]: {v["kind"]: v for v in case["attempts"][0]["verdicts"]}
        for case in report["cases"]
    }
    for case_id, kind in [
        ("kern-001", "nuggets.coverage"),
        ("kern-001", "rubric.judge"),
        ("priv-001", "behaviour.expected"),
    ]:
        assert verdicts[case_id][kind]["status"] == "error"
        assert verdicts[case_id][kind]["detail"]
