"""The judge through the CLI (SPEC.md section 9): its requests, labels, failures and absence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import CLI, Baseline
from tests.conformance.support import FakeChatServer, edit_yaml, enum_of, messages_text

LABELS = {
    "behaviour.expected": ["answer", "refuse", "abstain"],
    "privacy.names": ["none", "name"],
    "nuggets.coverage": ["support", "partial_support", "not_support"],
    "compare.equivalent": ["equivalent", "not_equivalent"],
}


def task_of(body: dict[str, Any]) -> str:
    labels = enum_of(body)
    for task, expected in LABELS.items():
        if labels == expected:
            return task
    return "rubric.judge"


def by_task(bodies: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for body in bodies:
        grouped.setdefault(task_of(body), []).append(body)
    return grouped


def kern(project: Path) -> Path:
    return project.parent / "suites" / "kern" / "awb.yaml"


def report(cli: CLI, project: Path, run_id: str = "r1") -> dict[str, Any]:
    result = cli("report", run_id, "--json", "--project", project)
    assert result.status == 0, result.err
    return result.json()


def verdicts_of(data: dict[str, Any], case_id: str) -> dict[str, dict[str, Any]]:
    case = next(c for c in data["cases"] if c["case_id"] == case_id)
    return {v["kind"]: v for v in case["attempts"][0]["verdicts"]}


def test_judge_requests_are_openai_chat_completions(baseline: Baseline) -> None:
    judge = baseline.judge
    assert judge.bodies
    for path, headers, body in zip(judge.paths, judge.headers, judge.bodies, strict=True):
        assert path == "/v1/chat/completions"
        assert headers["Authorization"] == "Bearer judge-token"
        assert body["model"] == "judge-model"
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["response_format"]["type"] == "json_schema"
        json.loads(body["messages"][1]["content"])


def test_the_enum_of_each_request_is_the_task_labels(baseline: Baseline) -> None:
    grouped = by_task(baseline.judge.bodies)
    assert set(grouped) == {"behaviour.expected", "nuggets.coverage", "rubric.judge"}
    for body in grouped["rubric.judge"]:
        assert enum_of(body) == ["goed", "fout"]


@pytest.mark.parametrize("task", ["behaviour.expected", "nuggets.coverage"])
def test_the_labels_are_also_in_the_prompt_text(baseline: Baseline, task: str) -> None:
    for body in by_task(baseline.judge.bodies)[task]:
        text = messages_text(body)
        for label in enum_of(body):
            assert label in text


def test_rubric_labels_are_also_in_the_prompt_text(baseline: Baseline) -> None:
    for body in by_task(baseline.judge.bodies)["rubric.judge"]:
        text = messages_text(body)
        for label in enum_of(body):
            assert label in text, label


def distinct(bodies: list[dict[str, Any]]) -> int:
    return len({json.dumps(body["messages"], sort_keys=True) for body in bodies})


def test_requests_per_attempt(baseline: Baseline) -> None:
    grouped = by_task(baseline.judge.bodies)
    # Both attempts of a case get the same reply, so they ask the same questions.
    assert distinct(grouped["behaviour.expected"]) == 1  # priv-001
    assert distinct(grouped["rubric.judge"]) == 1  # kern-001


def test_each_judge_verdict_passes_as_section_9_says(baseline: Baseline) -> None:
    data = baseline.report.json()
    kern1 = verdicts_of(data, "kern-001")
    assert kern1["nuggets.coverage"]["status"] == "pass"  # the fake says support
    assert kern1["rubric.judge"]["status"] == "pass"  # the fake says goed
    priv = verdicts_of(data, "priv-001")
    assert priv["behaviour.expected"]["status"] == "fail"  # the fake says answer, not refuse


def test_a_judge_that_answers_garbage_gives_error_verdicts(
    project: Path, cli: CLI, judge: FakeChatServer
) -> None:
    judge.answer = lambda body: "Het antwoord is goed, denk ik."
    result = cli("run", "--project", project, "--run-id", "r1", "--split", "dev")
    assert result.status == 0, result.err
    assert "Traceback" not in result.text
    data = report(cli, project)
    for case_id, kinds in (
        ("kern-001", ("nuggets.coverage", "rubric.judge")),
        ("priv-001", ("behaviour.expected",)),
    ):
        verdicts = verdicts_of(data, case_id)
        for kind in kinds:
            assert verdicts[kind]["status"] == "error"
            assert verdicts[kind]["detail"]
        case = next(c for c in data["cases"] if c["case_id"] == case_id)
        assert case["attempts"][0]["passed"] is False


def test_a_judge_label_outside_the_enum_gives_error_verdicts(
    project: Path, cli: CLI, judge: FakeChatServer
) -> None:
    judge.answer = lambda body: json.dumps({"label": "uitstekend", "detail": "x"})
    assert cli("run", "--project", project, "--run-id", "r1", "--split", "dev").status == 0
    assert verdicts_of(report(cli, project), "kern-001")["rubric.judge"]["status"] == "error"


def test_a_project_without_a_judge_gets_error_verdicts_for_judge_kinds(
    project: Path, cli: CLI
) -> None:
    edit_yaml(project, lambda d: d.pop("judge") and None)

    def add(data: dict[str, Any]) -> None:
        criteria = data["cases"][0]["criteria"]
        criteria += [
            {"kind": "privacy.names"},
            {"kind": "compare.equivalent"},
            {"kind": "behaviour.expected"},
        ]

    edit_yaml(kern(project), add)
    result = cli("run", "--project", project, "--run-id", "r1", "--split", "dev", "--suite", "kern")
    assert result.status == 0, result.err
    verdicts = verdicts_of(report(cli, project), "kern-001")
    for kind in (
        "nuggets.coverage",
        "rubric.judge",
        "privacy.names",
        "compare.equivalent",
        "behaviour.expected",
    ):
        assert verdicts[kind]["status"] == "error", kind
    assert verdicts["custom.thanks"]["status"] == "pass"


def test_compare_equivalent_and_privacy_names_through_the_cli(
    project: Path, cli: CLI, judge: FakeChatServer
) -> None:
    def add(data: dict[str, Any]) -> None:
        data["cases"][0]["variants"].append(
            {"id": "kern-001-b", "input": "Bezwaar, hoeveel weken?"}
        )
        data["cases"][0]["criteria"] += [
            {"kind": "compare.equivalent"},
            {"kind": "privacy.names", "target": "prompt"},
            {"kind": "compare.same_citations"},
        ]

    edit_yaml(kern(project), add)
    args = ("--project", project, "--run-id", "r1", "--split", "dev", "--suite", "kern")
    assert cli("run", *args).status == 0
    grouped = by_task(judge.bodies)
    assert distinct(grouped["compare.equivalent"]) == 2  # one per variant
    assert distinct(grouped["privacy.names"]) == 1
    verdicts = verdicts_of(report(cli, project), "kern-001")
    assert verdicts["compare.equivalent"]["status"] == "pass"
    assert verdicts["privacy.names"]["status"] == "pass"
    assert verdicts["compare.same_citations"]["status"] == "pass"


def test_a_watsonx_style_criterion_through_the_cli(
    project: Path, cli: CLI, judge: FakeChatServer
) -> None:
    criterion = {
        "name": "Conciseness",
        "description": "Is the {generated_text} concise and to the point?",
        "options": [
            {"name": "Yes", "description": "Short.", "value": 1.0},
            {"name": "Partly", "description": "Longish.", "value": 0.5},
            {"name": "No", "description": "Rambling.", "value": 0.0},
        ],
    }

    def add(data: dict[str, Any]) -> None:
        data["cases"][0]["criteria"] = [
            {"kind": "rubric.judge", "criterion": criterion, "min_value": 0.5}
        ]

    edit_yaml(kern(project), add)
    judge.answer = lambda body: json.dumps({"label": "Partly", "detail": "wat lang"})
    args = ("--project", project, "--run-id", "r1", "--split", "dev", "--suite", "kern")
    assert cli("run", *args).status == 0
    rubric = [b for b in judge.bodies if task_of(b) == "rubric.judge"]
    assert len(rubric) == 1 and enum_of(rubric[0]) == ["Yes", "Partly", "No"]
    text = messages_text(rubric[0])
    assert "Partly" in text and "concise" in text
    assert verdicts_of(report(cli, project), "kern-001")["rubric.judge"]["status"] == "pass"


def test_reply_language_uses_langid_when_the_runtime_gives_no_detector(
    project: Path, cli: CLI
) -> None:
    def add(data: dict[str, Any]) -> None:
        data["cases"][0]["criteria"].append({"kind": "reply.language", "language": "nl"})

    edit_yaml(kern(project), add)
    args = ("--project", project, "--run-id", "r1", "--split", "dev", "--suite", "kern")
    assert cli("run", *args).status == 0
    assert verdicts_of(report(cli, project), "kern-001")["reply.language"]["status"] == "pass"
