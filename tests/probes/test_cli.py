"""`soev-evals probe-judge` through the command line (docs/judge.md#is-the-judge-fooled-probes),
against the fake system and a fake judge with a position bias on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.calibration.conftest import ENVIRONMENT, line, write_labels
from tests.support.chat_completions import FakeChatCompletions, labels_of, verdict
from tests.support.cli import Result, invoke, run_module
from tests.support.project import SECRET, TEST_IDS, edit_yaml, legal_answer, write_project
from tests.support.server import Response
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e


def position_biased(body: dict[str, Any]) -> Response:
    """Fair on behaviour and nuggets; on a rubric it always takes the first label."""
    labels = labels_of(body)
    inputs = json.loads(body["messages"][1]["content"])
    reply = str(inputs.get("reply", inputs.get("text", "")))
    if "refuse" in labels:
        refused = any(marker in reply for marker in ("kan geen", "cannot", "not able"))
        return verdict("refuse" if refused else "answer")
    if "support" in labels:
        return verdict("support" if "zes weken" in reply else "not_support")
    return verdict(labels[0])


@dataclass
class Probed:
    project: Path
    judge: FakeChatCompletions
    before: int
    """The judge's requests before the first probe run (the run's grading)."""
    first: Result
    asked: int
    second: Result


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probed]:
    root = tmp_path_factory.mktemp("probed")
    with (
        FakeThreadAPI(legal_answer, token=ENVIRONMENT["SOEV_API_KEY"]) as system,
        FakeChatCompletions(position_biased) as judge,
        pytest.MonkeyPatch.context() as patch,
    ):
        for name, value in ENVIRONMENT.items():
            patch.setenv(name, value)
        project = write_project(root / "p", system.url, judge.url)
        assert invoke("run", "--project", project, "--run-id", "r1").status == 0
        write_labels(
            project,
            [
                line(),
                line("kern-001", "Het zijn zes weken.", "rubric.judge"),
                line("kern-001", "Zes weken, zie de wet.", "rubric.judge"),
                line("kern-t01", SECRET, "citations.required"),
            ],
        )
        before = len(judge.bodies)
        first = invoke("probe-judge", "--json", "--project", project)
        asked = judge.calls
        second = invoke("probe-judge", "--project", project)
        yield Probed(project, judge, before, first, asked, second)


def test_probe_judge_prints_the_figures_of_each_criterion_as_json(probed: Probed) -> None:
    assert probed.first.status == 0, probed.first.err
    found = probed.first.json()
    assert list(found) == ["criteria", "judge_calls", "cache_hits"]
    assert list(found["criteria"]) == ["behaviour.expected", "nuggets.coverage", "rubric.judge"]
    rubric = found["criteria"]["rubric.judge"]
    assert list(rubric) == ["prompt_sha256", "probes"]
    order = rubric["probes"]["option_order"]
    assert order == {
        "kind": "invariance",
        "items": 3,
        "flipped": 3,
        "to_pass": 0,
        "to_fail": 3,
        "judge_errors": 0,
        "flip_rate": 1.0,
        "flip_ci95": pytest.approx([0.43850, 1.0], abs=1e-5),
    }
    assert rubric["probes"]["verbosity"]["flipped"] == 0
    behaviour = found["criteria"]["behaviour.expected"]["probes"]
    assert behaviour["counterfactual"]["kind"] == "sensitivity"
    assert behaviour["counterfactual"]["flip_rate"] == 1.0
    assert found["judge_calls"] == probed.asked - probed.before > 0


def test_the_test_split_is_never_sent_to_the_judge(probed: Probed) -> None:
    sent = json.dumps(probed.judge.bodies[probed.before :], ensure_ascii=False)
    assert SECRET not in sent
    probed.first.assert_no_test_content()
    probed.second.assert_no_test_content()


def test_a_second_probe_run_asks_the_judge_nothing(probed: Probed) -> None:
    assert probed.second.status == 0, probed.second.err
    assert probed.judge.calls == probed.asked
    assert "the judge was asked 0 times" in probed.second.out
    assert "rubric.judge: bias shown: option_order" in probed.second.out
    assert "behaviour.expected: no bias shown above 5 %; sensitive" in probed.second.out
    offline = invoke("probe-judge", "--json", "--offline", "--project", probed.project)
    assert offline.status == 0, offline.err
    assert offline.json()["criteria"] == probed.first.json()["criteria"]
    assert offline.json()["judge_calls"] == 0
    assert probed.judge.calls == probed.asked


def test_max_flip_exits_3_on_a_shown_bias_and_0_without(probed: Probed) -> None:
    gated = run_module(
        "probe-judge", "--max-flip", "0.05", "--offline", "--project", probed.project
    )
    assert gated.status == 3, gated.err
    assert gated.error_line() == (
        "soev-evals: judge probe gate failed: an invariance probe may flip at most 0.05 and a "
        "sensitivity probe must flip at least 0.95; rubric.judge: option_order flips 44 % or more"
    )
    fair = invoke(
        "probe-judge",
        *("--criteria", "behaviour.expected", "nuggets.coverage"),
        *("--max-flip", "0.05", "--offline", "--items", "5", "--seed", "3"),
        *("--project", probed.project),
    )
    assert fair.status == 0, fair.err
    assert "rubric.judge" not in fair.out


def test_bad_input_is_one_line(probed: Probed, tmp_path: Path) -> None:
    unknown = invoke("probe-judge", "--criteria", "nope", "--offline", "--project", probed.project)
    assert unknown.status == 1
    assert "--criteria: 'nope' is not a judged criterion" in unknown.error_line()
    assert invoke("probe-judge", "--items", "0", "--project", probed.project).status == 2
    assert invoke("probe-judge", "--max-flip", "1.5", "--project", probed.project).status == 2
    copy = tmp_path / "p"
    shutil.copytree(probed.project.parent, copy, ignore=shutil.ignore_patterns("runs", ".soev"))
    edit_yaml(copy / "project.yaml", lambda data: data.update(probes={"texts": {"closin": ["x"]}}))
    typo = invoke("probe-judge", "--offline", "--project", copy / "project.yaml")
    assert typo.status == 1
    assert typo.error_line().endswith("project.yaml: probes.texts.closin: unknown key")
    for case_id in TEST_IDS:
        assert case_id not in unknown.text
