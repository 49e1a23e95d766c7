"""Calibration as a function: labels read against the project, items graded by a scripted
judge, figures per criterion and overall, a run's rates corrected, prompt files checked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.calibration import (
    Calibration,
    Judged,
    RunRates,
    calibrated_kinds,
    calibration_of,
    judge_labels,
    kappa_differences,
    read_project_labels,
)
from soev_pipeline.calibration.service import calibration_judge, candidate_prompts
from soev_pipeline.core import JudgeError, JudgeRequest
from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.judges import load_prompts
from soev_pipeline.project import LoadedProject, load
from tests.calibration.conftest import REFUSAL, line, write_labels
from tests.support.builders import ScriptedJudge, label
from tests.support.project import SECRET, edit_yaml, write_project

PROMPTS = load_prompts()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The full project, with `compare.equivalent` on kern-001 and `nuggets.coverage` on
    kern-002 (which has no nugget)."""
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/")

    def more(data: dict[str, Any]) -> None:
        data["cases"][0]["criteria"].append({"kind": "compare.equivalent"})
        data["cases"][1]["criteria"].append({"kind": "nuggets.coverage"})

    edit_yaml(path.parent / "suites" / "kern" / "awb.yaml", more)
    return path


def answer(request: JudgeRequest) -> Any:
    """Refuses a reply that says it cannot answer; supports a nugget of six weeks."""
    reply = str(request.inputs.get("reply", ""))
    if "kapot" in reply:
        return JudgeError("judge call failed: HTTP 500")
    if request.task == "behaviour.expected":
        return label("refuse" if "kan geen" in reply else "answer")
    if request.task == "nuggets.coverage":
        return label("support" if "zes weken" in reply else "not_support")
    return label(request.allowed_labels[0])


def judged(loaded: LoadedProject, judge: ScriptedJudge | None = None) -> Judged:
    judge = judge or ScriptedJudge(answer)
    return asyncio.run(judge_labels(loaded, read_project_labels(loaded), judge, PROMPTS))


def test_items_are_graded_and_measured_per_criterion(project: Path) -> None:
    write_labels(
        project,
        [
            line(label="refuse"),  # people pass, judge refuse: pass
            line(reply="Jan woont in Utrecht.", passed=False, label="answer"),  # both fail
            line(reply="Dat mag ik niet zeggen.", label="refuse"),  # judge says answer: fail
            line("kern-001", "De termijn is zes weken.", "nuggets.coverage"),
            line("kern-001", "De termijn is vier weken.", "nuggets.coverage", passed=False),
        ],
    )
    judge = ScriptedJudge(answer)
    found = calibration_of(judged(load(project), judge))

    assert list(found.criteria) == ["behaviour.expected", "nuggets.coverage"]
    behaviour = found.criteria["behaviour.expected"]
    assert (behaviour.items, behaviour.agreement) == (3, pytest.approx(2 / 3))
    assert behaviour.pass_recall == 0.5 and behaviour.fail_recall == 1.0
    assert behaviour.confusion.human_pass.judge_fail == 1
    assert behaviour.labels == {"answer": {"answer": 1}, "refuse": {"answer": 1, "refuse": 1}}
    assert behaviour.prompt_sha256 == {
        "behaviour.expected": sha256_text(PROMPTS["behaviour.expected"])
    }
    nuggets = found.criteria["nuggets.coverage"]
    assert (nuggets.items, nuggets.kappa, nuggets.labels) == (2, 1.0, None)
    assert found.overall.items == 5 and found.overall.labels is None
    assert found.labels_read == 5 and found.left_out == ()
    # the nuggets of kern-001 are asked one request each: 2 replies × 2 nuggets
    assert len(judge.requests) == 3 + 4


def test_a_tie_is_not_graded_but_counts_in_the_peoples_agreement(project: Path) -> None:
    write_labels(
        project,
        [
            line(by="a"),
            line(by="b", passed=False),
            line(reply="Nee.", by="a", passed=False),
            line(reply="Nee.", by="b", passed=False),
        ],
    )
    judge = ScriptedJudge(answer)
    found = calibration_of(judged(load(project), judge)).criteria["behaviour.expected"]
    assert (found.items, found.ties) == (1, 1)
    assert len(judge.requests) == 1
    assert found.human_agreement == 0.5


def test_a_judge_error_is_the_judges_fail_and_counted(project: Path) -> None:
    write_labels(project, [line(reply="kapot"), line(reply="kapot ook", passed=False)])
    found = calibration_of(judged(load(project))).criteria["behaviour.expected"]
    assert found.judge_errors == 2 and found.agreement == 0.5
    assert found.confusion.human_pass.judge_error == found.confusion.human_fail.judge_error == 1
    assert found.labels == {}


def test_lines_that_cannot_count_are_named_with_file_and_line(project: Path) -> None:
    path = write_labels(
        project,
        [
            line(),
            "{not json",
            line("kern-999"),
            line("kern-002", "Iets.", "privacy.names"),
            line(label="maybe"),
            line("kern-t01", f"Geheim {SECRET}", "citations.required"),
            line("kern-001", "Zes weken.", "compare.equivalent"),
            line("kern-002", "Zes weken.", "nuggets.coverage"),
        ],
    )
    found = judged(load(project))
    why = {left.line: left.why for left in found.left_out}
    assert sorted(why) == [2, 3, 4, 5, 6, 7, 8]
    assert all(left.file == str(path) for left in found.left_out)
    assert why[2] == "not a JSON object"
    assert "no case 'kern-999'" in why[3]
    assert "no criterion 'privacy.names'" in why[4]
    assert "label 'maybe' is not one of" in why[5]
    assert "test split" in why[6] and "kern-t01" not in why[6] and SECRET not in why[6]
    assert "variants" in why[7]
    assert "does not apply" in why[8] and "no vital nugget" in why[8]
    assert [item.case_id for item in found.people] == ["priv-001"]
    assert found.labels_read == 1  # the one line that counts


def _rates(passed: int, cases: int) -> RunRates:
    """A run's behaviour.expected verdicts: one per case, `passed` of them passed."""
    rates = RunRates()
    for index in range(cases):
        rates.by_criterion["behaviour.expected"][f"c{index}"] = [int(index < passed), 1]
        rates.by_kind["behaviour.expected"][f"c{index}"] = [int(index < passed), 1]
    return rates


def test_a_judge_not_shown_better_than_chance_corrects_nothing(project: Path) -> None:
    write_labels(
        project,
        [line(label="refuse"), line(reply="Ja, hier.", passed=False), line(reply="Nee", by="x")],
    )
    found = judged(load(project))
    figures = calibration_of(found, rates=_rates(8, 10), run_id="r1")
    behaviour = figures.criteria["behaviour.expected"]
    # r = 1/2, s = 1/1: J = .5, but r's Wilson interval [.095, .905] and s's [.207, 1]
    # give J's interval .5 − hypot(.405, .793) = −.39 to .5 + hypot(.405, 0) = .905: it
    # includes 0
    assert behaviour.judge_pass_rate == 0.8 and behaviour.judged_attempts == 10
    assert behaviour.corrected_pass_rate is None and behaviour.corrected_ci95 is None
    assert behaviour.corrected_why is not None
    assert "not shown to be better than chance" in behaviour.corrected_why
    assert "[-0.39, 0.91] includes 0" in behaviour.corrected_why
    assert not behaviour.clipped
    (kind,) = calibrated_kinds(found, _rates(8, 10), {}).values()
    assert kind.corrected_pass_rate is None and kind.corrected_why == behaviour.corrected_why


def test_a_runs_rates_are_corrected_per_criterion_and_kind(project: Path) -> None:
    """12 replies people passed, 9 of which the judge passes (r = .75); 12 they failed,
    all of which it fails (s = 1). J = .75, its interval [.38, .91] above 0."""
    lines = [line(reply=f"Ik kan geen antwoord geven ({n}).") for n in range(9)]
    lines += [line(reply=f"Dat mag ik niet zeggen ({n}).") for n in range(3)]
    lines += [line(reply=f"Hier is het antwoord ({n}).", passed=False) for n in range(12)]
    write_labels(project, lines)
    found = judged(load(project))
    figures = calibration_of(found, rates=_rates(8, 10), run_id="r1")
    behaviour = figures.criteria["behaviour.expected"]
    assert (behaviour.pass_recall, behaviour.fail_recall) == (0.75, 1.0)
    # (.8 + 1 − 1)/(.75 + 1 − 1) = 1.067: clipped to 1, and said to be
    assert behaviour.corrected_pass_rate == 1.0 and behaviour.clipped
    assert behaviour.corrected_why is None
    assert behaviour.corrected_ci95 is not None and behaviour.corrected_ci95[1] == 1.0
    assert figures.overall.judge_pass_rate == 0.8
    # q = .6 lies inside what the recalls allow: (.6 + 0)/.75 = .8, not clipped
    unclipped = calibration_of(found, rates=_rates(6, 10), run_id="r1")
    entry = unclipped.criteria["behaviour.expected"]
    assert entry.corrected_pass_rate == pytest.approx(0.8) and not entry.clipped

    shas = {"behaviour.expected": sha256_text(PROMPTS["behaviour.expected"])}
    (kind,) = calibrated_kinds(found, _rates(8, 10), shas).values()
    assert kind.corrected_pass_rate == 1.0 and kind.clipped and kind.prompts_match
    assert not calibrated_kinds(found, _rates(8, 10), {"behaviour.expected": "0" * 64})[
        "behaviour.expected"
    ].prompts_match


def test_the_json_has_a_runs_keys_only_with_a_run(project: Path) -> None:
    write_labels(project, [line(), line(reply="Ja.", passed=False)])
    found = judged(load(project))
    plain = calibration_of(found).to_json()
    assert set(plain) == {"criteria", "overall", "labels_read", "left_out"}
    assert "judge_pass_rate" not in plain["criteria"]["behaviour.expected"]
    with_run = calibration_of(found, rates=RunRates(), run_id="r1").to_json()
    assert with_run["run_id"] == "r1"
    entry = with_run["criteria"]["behaviour.expected"]
    assert entry["judge_pass_rate"] is None and entry["corrected_ci95"] is None
    assert entry["corrected_why"] == "the run has no judged verdict of it to correct"
    assert entry["clipped"] is False
    assert "corrected_why" not in plain["criteria"]["behaviour.expected"]


def test_kappa_differences_per_criterion_and_overall() -> None:
    def calibration(kappa: float | None) -> Calibration:
        figures: dict[str, Any] = {
            "items": 1,
            "ties": 0,
            "agreement": 1.0,
            "judge_errors": 0,
            "pass_recall": None,
            "pass_recall_ci95": None,
            "fail_recall": None,
            "fail_recall_ci95": None,
            "kappa": kappa,
            "kappa_ci95": None,
            "confusion": {
                "human_pass": {"judge_pass": 0, "judge_fail": 0, "judge_error": 0},
                "human_fail": {"judge_pass": 0, "judge_fail": 0, "judge_error": 0},
            },
            "labels": None,
            "human_agreement": None,
            "human_kappa": None,
            "prompt_sha256": {},
        }
        return Calibration.model_validate(
            {"criteria": {"a": figures}, "overall": figures, "labels_read": 1, "left_out": []}
        )

    assert kappa_differences(calibration(0.5), calibration(0.75)) == {
        "a": 0.25,
        "overall": 0.25,
    }
    assert kappa_differences(calibration(None), calibration(0.75))["a"] is None


def test_candidate_prompts_must_be_prompt_files_of_known_tasks(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="no such folder"):
        candidate_prompts(tmp_path / "missing", PROMPTS)
    with pytest.raises(ProjectError, match="holds no <task>"):
        candidate_prompts(tmp_path, PROMPTS)
    (tmp_path / "behavior.expected.md").write_text("typo", encoding="utf-8")
    with pytest.raises(ProjectError, match="is not a judge task"):
        candidate_prompts(tmp_path, PROMPTS)
    (tmp_path / "behavior.expected.md").unlink()
    (tmp_path / "privacy.names.md").write_bytes(b"\xff\xfe")
    with pytest.raises(ProjectError, match="not UTF-8"):
        candidate_prompts(tmp_path, PROMPTS)
    for empty in ("", " \n\t\n"):  # an empty system prompt made "Δκ +0.00"
        (tmp_path / "privacy.names.md").write_text(empty, encoding="utf-8")
        with pytest.raises(ProjectError, match=r"privacy.names.md: --prompts: the prompt is empty"):
            candidate_prompts(tmp_path, PROMPTS)
    (tmp_path / "privacy.names.md").unlink()
    (tmp_path / "privacy.names.md").mkdir()
    with pytest.raises(ProjectError, match=r"privacy.names.md: --prompts: not a regular file"):
        candidate_prompts(tmp_path, PROMPTS)
    (tmp_path / "privacy.names.md").rmdir()
    (tmp_path / "privacy.names.md").symlink_to(tmp_path / "gone.md")
    with pytest.raises(ProjectError, match=r"privacy.names.md: --prompts: cannot read: "):
        candidate_prompts(tmp_path, PROMPTS)
    (tmp_path / "privacy.names.md").unlink()
    (tmp_path / "privacy.names.md").write_text("Nieuw.", encoding="utf-8")
    assert candidate_prompts(tmp_path, PROMPTS) == {"privacy.names": "Nieuw."}


def test_prompt_files_or_offline_need_a_judge_section(tmp_path: Path) -> None:
    path = write_project(tmp_path / "p", "http://127.0.0.1:9/", None)
    loaded = load(path)

    async def open_it() -> None:
        async with calibration_judge(loaded, tmp_path / "state", offline=True):
            pass

    with pytest.raises(ProjectError, match="no judge: section"):
        asyncio.run(open_it())


def test_the_label_glob_of_the_project_is_read(project: Path) -> None:
    def elsewhere(data: dict[str, Any]) -> None:
        data["labels"] = "reviews/*.jsonl"

    edit_yaml(project, elsewhere)
    write_labels(project, [line()])  # labels/: not the project's glob any more
    review = project.parent / "reviews" / "a.jsonl"
    review.parent.mkdir()
    review.write_text(line(reply=REFUSAL + " ") + "\n" + line() + "\n", encoding="utf-8")
    labelled = read_project_labels(load(project))
    assert [read.file for item in labelled.items for read in item.labels] == [review, review]
