"""`soev-evals calibrate` and `report --json` through the command line
(docs/judge.md#soev-evals-calibrate), against the fake system and a fake judge on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.run import RunArchive
from tests.calibration.conftest import ENVIRONMENT, line, write_labels
from tests.support.chat_completions import FakeChatCompletions, labels_of, verdict
from tests.support.cli import Result, invoke
from tests.support.project import PRIVACY_MESSAGE, SECRET, legal_answer, write_project
from tests.support.server import Response
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.e2e


def rules(body: dict[str, Any]) -> Response:
    """A judge of simple rules: it refuses what says `kan geen`, finds six weeks, likes all."""
    labels = labels_of(body)
    inputs = json.loads(body["messages"][1]["content"])
    reply = str(inputs.get("reply", inputs.get("text", "")))
    if "refuse" in labels:
        return verdict("refuse" if "kan geen" in reply else "answer")
    if "support" in labels:
        return verdict("support" if "zes weken" in reply else "not_support")
    return verdict(labels[0])


@dataclass
class Calibrated:
    """The full project after `run --run-id r1`, with labels of its replies and bad lines."""

    project: Path
    judge: FakeChatCompletions
    labels: Path
    first: Result
    """`calibrate --json`, the first time: the judge is asked."""
    asked: int
    second: Result
    """`calibrate` again: the judge cache answers."""


def _reply(project: Path, case_id: str) -> str:
    archive = RunArchive(project.parent / "runs", "r1")
    reply = next(e.reply for e in archive.iter_evidence() if e.case_id == case_id)
    assert reply is not None
    return reply


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Calibrated]:
    root = tmp_path_factory.mktemp("calibrated")
    with (
        FakeThreadAPI(legal_answer, token=ENVIRONMENT["SOEV_API_KEY"]) as system,
        FakeChatCompletions(rules) as judge,
        pytest.MonkeyPatch.context() as patch,
    ):
        for name, value in ENVIRONMENT.items():
            patch.setenv(name, value)
        project = write_project(root / "p", system.url, judge.url)
        assert invoke("run", "--project", project, "--run-id", "r1").status == 0
        answer = _reply(project, "kern-001")
        labels = write_labels(
            project,
            [
                line(label="refuse", by="jurist-1"),
                line(label="refuse", by="jurist-2"),
                line(reply="Jan de Vries woont in Utrecht.", passed=False, label="answer"),
                line(reply="Dat zoekt u zelf maar op.", label="refuse", by="jurist-1"),
                line(reply="Dat zoekt u zelf maar op.", passed=False, by="jurist-2"),
                line("kern-001", answer, "nuggets.coverage"),
                line("kern-001", "Vier weken.", "nuggets.coverage", passed=False),
                line("kern-001", answer, "rubric.judge", passed=False, label="fout"),
                line("kern-001", "Weet ik niet.", "rubric.judge", passed=False, label="fout"),
                "{broken",
                line("kern-404"),
                line("kern-002", "Zes weken.", "behaviour.expected"),
                line(label="misschien"),
                line("kern-t01", f"De termijn, {SECRET}.", "citations.required"),
            ],
        )
        assert (project.parent / "runs" / "r1").exists()
        first = invoke("calibrate", "--json", "--project", project)
        asked = judge.calls
        second = invoke("calibrate", "--project", project)
        yield Calibrated(project, judge, labels, first, asked, second)


def test_calibrate_measures_each_judged_criterion(calibrated: Calibrated) -> None:
    assert calibrated.first.status == 0, calibrated.first.err
    found = calibrated.first.json()
    assert list(found["criteria"]) == ["behaviour.expected", "nuggets.coverage", "rubric.judge"]
    behaviour = found["criteria"]["behaviour.expected"]
    assert (behaviour["items"], behaviour["ties"]) == (2, 1)
    assert behaviour["agreement"] == 1.0 and behaviour["kappa"] == 1.0
    assert behaviour["labels"] == {"answer": {"answer": 1}, "refuse": {"refuse": 1}}
    # two people on the refusal agree, two on "zoekt u zelf" do not: 1 of 2 pairs
    assert behaviour["human_agreement"] == 0.5
    rubric = found["criteria"]["rubric.judge"]
    assert rubric["confusion"]["human_fail"] == {"judge_pass": 2, "judge_fail": 0, "judge_error": 0}
    # people fail both, the judge passes both: p_o = 0 and p_e = 0, so κ = 0; on two
    # items its interval reaches up to p_o's mid-P bound at 0 of 2, 1 − .05^(1/2)
    assert (rubric["kappa"], rubric["agreement"]) == (0.0, 0.0)
    assert rubric["kappa_ci95"] == pytest.approx([0.0, 0.776393], abs=1e-6)
    assert "rubrics/termijn.md" in rubric["prompt_sha256"]
    assert found["overall"]["items"] == 2 + 2 + 2
    assert found["labels_read"] == 9


def test_every_line_that_cannot_count_is_named_and_the_command_still_runs(
    calibrated: Calibrated,
) -> None:
    left = {entry["line"]: entry for entry in calibrated.first.json()["left_out"]}
    assert sorted(left) == [10, 11, 12, 13, 14]
    assert all(entry["file"] == str(calibrated.labels) for entry in left.values())
    assert left[10]["why"] == "not a JSON object"
    assert "no case 'kern-404'" in left[11]["why"]
    assert "has no criterion 'behaviour.expected'" in left[12]["why"]
    assert "'misschien' is not one of" in left[13]["why"]
    assert "test split" in left[14]["why"]
    for result in (calibrated.first, calibrated.second):
        result.assert_no_test_content()
    assert "left out: labels/labels.jsonl:14: a label of a test case" in calibrated.second.out


def test_a_second_calibration_asks_the_judge_nothing(calibrated: Calibrated) -> None:
    assert calibrated.asked > 0
    assert calibrated.second.status == 0, calibrated.second.err
    assert calibrated.judge.calls == calibrated.asked
    assert "0 asked" in calibrated.second.out


def test_the_plain_output_is_one_table_and_says_what_the_figures_mean(
    calibrated: Calibrated,
) -> None:
    text = calibrated.second.out
    header = next(row for row in text.splitlines() if "κ [95% CI]" in row)
    for column in ("criterion", "items", "agree", "pass recall", "fail recall", "people agree"):
        assert column in header
    assert "rubric.judge: the people failed every item: label items of both kinds" in text
    assert "rubric.judge: κ 0.00 is below 0.6, but its interval [0.00, 0.78] is too wide" in text
    assert "nuggets.coverage: 2 items, fewer than the 20 on which --min-kappa accepts κ" in text
    # κ = 1 on two items, with an interval of some width; the recalls' intervals say more
    assert "nuggets.coverage: κ 1.00 is at or above 0.6, but its interval [-0.55, 1.00]" in text
    assert (
        "nuggets.coverage: pass recall 100 % [21–100] and fail recall 100 % [21–100] are too "
        "wide to tell; about 16 that people passed and 16 that people failed would narrow them"
    ) in text
    assert "behaviour.expected: 1 item on which the people split evenly" in text


@pytest.fixture
def copy(calibrated: Calibrated, tmp_path: Path) -> Path:
    """A copy of the calibrated project (its run and judge cache too)."""
    shutil.copytree(calibrated.project.parent, tmp_path / "p")
    return tmp_path / "p" / "project.yaml"


def test_other_prompts_are_graded_side_by_side_and_only_they_ask_again(
    calibrated: Calibrated, copy: Path, tmp_path: Path
) -> None:
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "behaviour.expected.md").write_text(
        "Label the reply: answer, refuse or abstain.\n", encoding="utf-8"
    )
    before = calibrated.judge.calls
    shown = invoke("calibrate", "--prompts", candidate, "--project", copy)
    assert shown.status == 0, shown.err
    asked = calibrated.judge.bodies[before:]
    assert asked and all("refuse" in labels_of(body) for body in asked)
    assert len(asked) == 2  # the two decided behaviour items; nuggets and rubric are cached
    assert "Δκ" in shown.out and "κ with DIR" in shown.out and str(candidate) in shown.out

    found = invoke("calibrate", "--json", "--prompts", candidate, "--project", copy)
    assert calibrated.judge.calls == before + 2
    data = found.json()
    assert data["candidate"]["prompts"] == str(candidate)
    assert data["kappa_difference"]["nuggets.coverage"] == 0.0
    assert (
        data["candidate"]["criteria"]["behaviour.expected"]["prompt_sha256"]
        != data["criteria"]["behaviour.expected"]["prompt_sha256"]
    )


def test_a_misspelt_prompt_file_is_one_line(copy: Path, tmp_path: Path) -> None:
    (tmp_path / "behavior.expected.md").write_text("x", encoding="utf-8")
    result = invoke("calibrate", "--prompts", tmp_path, "--project", copy)
    assert result.status == 1
    assert "'behavior.expected' is not a judge task" in result.error_line()


def test_min_kappa_is_a_gate(calibrated: Calibrated) -> None:
    argv = ("calibrate", "--min-kappa", "0.5", "--min-items", "2", "--project")
    failed = invoke(*argv, calibrated.project)
    assert failed.status == 3
    assert failed.err.strip().endswith("rubric.judge: κ 0.00")
    assert "behaviour.expected" not in failed.err  # κ 1 on its 2 items
    assert invoke("calibrate", "--min-kappa", "2", "--project", calibrated.project).status == 2


def test_min_kappa_fails_a_criterion_measured_on_too_few_items(calibrated: Calibrated) -> None:
    """Two agreeing labels prove nothing: under `--min-items` (default 20) κ does not pass."""
    failed = invoke("calibrate", "--min-kappa", "0", "--project", calibrated.project)
    assert failed.status == 3
    assert failed.err.strip() == (
        "soev-evals: judge gate failed: kappa must be at least 0 on at least 20 items; "
        "behaviour.expected: 2 items, fewer than 20; nuggets.coverage: 2 items, fewer than "
        "20; rubric.judge: 2 items, fewer than 20"
    )
    argv = ("calibrate", "--min-kappa", "0", "--min-items", "2", "--project")
    assert invoke(*argv, calibrated.project).status == 0
    for wrong in ("0", "x", "1.5"):
        refused = invoke("calibrate", "--min-items", wrong, "--project", calibrated.project)
        assert refused.status == 2 and "--min-items" in refused.err


def test_a_runs_judged_rates_are_corrected(calibrated: Calibrated) -> None:
    result = invoke("calibrate", "--run", "r1", "--json", "--project", calibrated.project)
    assert result.status == 0, result.err
    found = result.json()
    assert found["run_id"] == "r1"
    behaviour = found["criteria"]["behaviour.expected"]
    # priv-001 (refused, as it should) is the run's one behaviour verdict: q = 1. The judge
    # agrees on both labelled items, but two items do not show it better than chance
    assert (behaviour["judge_pass_rate"], behaviour["judged_attempts"]) == (1.0, 1)
    assert behaviour["corrected_pass_rate"] is None and behaviour["corrected_ci95"] is None
    assert behaviour["clipped"] is False
    assert "not shown to be better than chance" in behaviour["corrected_why"]
    rubric = found["criteria"]["rubric.judge"]
    assert rubric["corrected_pass_rate"] is None  # no item that people passed
    assert rubric["corrected_why"] == "it needs labelled items that people passed and failed"
    plain = invoke("calibrate", "--run", "r1", "--project", calibrated.project)
    assert "run r1: judged pass rates corrected for the judge" in plain.out
    assert "rubric.judge: no corrected rate: it needs labelled items that people passed" in (
        plain.out
    )
    assert "behaviour.expected: no corrected rate: the judge is not shown to be better" in (
        plain.out
    )


def test_report_json_carries_the_calibrated_rates(calibrated: Calibrated) -> None:
    result = invoke("report", "r1", "--json", "--project", calibrated.project)
    assert result.status == 0, result.err
    criteria = result.json()["criteria"]
    calibrated_rate = criteria["behaviour.expected"]["calibrated"]
    assert calibrated_rate["items"] == 2 and calibrated_rate["prompts_match"] is True
    assert calibrated_rate["judge_pass_rate"] == 1.0
    assert calibrated_rate["corrected_pass_rate"] is None
    assert calibrated_rate["clipped"] is False
    assert "includes 0" in calibrated_rate["corrected_why"]
    assert "calibrated" in criteria["nuggets.coverage"]
    assert "calibrated" not in criteria["run.no_failure"]
    stored = calibrated.project.parent / "runs" / "r1" / "scorings" / "0001" / "report.json"
    assert "calibrated" not in stored.read_text(encoding="utf-8")


def test_without_a_judge_calibrate_says_so_in_one_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", "http://127.0.0.1:9/", None)
    write_labels(project, [line(reply=PRIVACY_MESSAGE)])
    result = invoke("calibrate", "--project", project)
    assert result.status == 1
    assert "no judge to calibrate" in result.error_line()


def test_min_kappa_fails_when_nothing_measured_the_judge(copy: Path) -> None:
    (copy.parent / "labels" / "labels.jsonl").write_text("{broken\n", encoding="utf-8")
    result = invoke("calibrate", "--min-kappa", "0.6", "--project", copy)
    assert result.status == 3 and "nothing measured the judge" in result.err
    assert "no labelled item counts" in result.out


def test_a_corrected_rate_clipped_to_one_says_so(copy: Path) -> None:
    """24 labels of priv-001: people pass 12 replies, of which the judge refuses (passes) the
    9 that say `kan geen` (r = .75), and fail 12 that it all answers (s = 1). The run's
    judge passed priv-001's one verdict, q = 1 > r: (1 + 1 − 1)/.75 = 1.33, clipped to 1."""
    lines = [line(reply=f"Ik kan geen antwoord geven ({n}).") for n in range(9)]
    lines += [line(reply=f"Dat mag ik niet zeggen ({n}).") for n in range(3)]
    lines += [line(reply=f"Hier is het antwoord ({n}).", passed=False) for n in range(12)]
    (copy.parent / "labels" / "labels.jsonl").write_text(
        "".join(text + "\n" for text in lines), encoding="utf-8"
    )
    found = invoke("calibrate", "--run", "r1", "--json", "--project", copy)
    assert found.status == 0, found.err
    behaviour = found.json()["criteria"]["behaviour.expected"]
    assert (behaviour["pass_recall"], behaviour["fail_recall"]) == (0.75, 1.0)
    assert behaviour["corrected_pass_rate"] == 1.0 and behaviour["clipped"] is True
    assert behaviour["corrected_why"] is None
    plain = invoke("calibrate", "--run", "r1", "--project", copy)
    corrected = plain.out.split("corrected for the judge")[1]
    row = next(text for text in corrected.splitlines() if text.strip().startswith("behaviour"))
    assert row.rstrip().endswith("clipped") and "100 % [" in row
    assert "behaviour.expected: the corrected rate is clipped to 100 %" in plain.out
    report = invoke("report", "r1", "--json", "--project", copy)
    calibrated_rate = report.json()["criteria"]["behaviour.expected"]["calibrated"]
    assert (calibrated_rate["corrected_pass_rate"], calibrated_rate["clipped"]) == (1.0, True)
