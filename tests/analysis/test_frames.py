"""The data frames of soev_pipeline.analysis: their columns and types, the figures of the
report, the filters, and the sealed test split."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from soev_pipeline.analysis import (
    TABLES,
    attempts_frame,
    cases_frame,
    labels_frame,
    runs_frame,
    verdicts_frame,
)
from soev_pipeline.analysis.reading import judge_label
from soev_pipeline.calibration import LabelLine
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.run.report import read_report
from tests.analysis.conftest import Nights
from tests.support.project import SECRET, TEST_IDS

FRAMES: dict[str, Callable[..., pd.DataFrame]] = {
    "runs": runs_frame,
    "cases": cases_frame,
    "attempts": attempts_frame,
    "verdicts": verdicts_frame,
    "labels": labels_frame,
}


def _label(nights: Nights, case_id: str, reply: str) -> str:
    return LabelLine.of(
        case_id=case_id, reply=reply, kind="behaviour.expected", nth=0, passed=False,
        label="answer", by="jurist", note="te stellig",
    ).to_line()  # fmt: skip


def _with_labels(nights: Nights) -> None:
    folder = nights.directory / "labels"
    folder.mkdir(exist_ok=True)
    lines = [_label(nights, "priv-001", "Jan woont hier."), _label(nights, TEST_IDS[1], SECRET)]
    (folder / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("table", list(TABLES))
def test_every_frame_has_the_documented_columns_and_types(own_nights: Nights, table: str) -> None:
    _with_labels(own_nights)
    frame = FRAMES[table](own_nights.project_file)
    assert len(frame) > 0
    assert list(frame.columns) == [column.name for column in TABLES[table]]
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == {
        column.name: column.dtype for column in TABLES[table]
    }


@pytest.mark.parametrize("run_id", ["n1", "n2", "n3"])
def test_the_frames_count_what_the_report_counts(nights: Nights, run_id: str) -> None:
    report = read_report(nights.archive(run_id))
    runs = runs_frame(nights.project_file, runs=[run_id]).iloc[0]
    overall = report.overall
    assert (runs.cases, runs.attempts, runs.passed_attempts) == (
        overall.cases, overall.attempts, overall.passed_attempts,
    )  # fmt: skip
    assert runs.pass_rate == pytest.approx(overall.pass_rate)
    assert runs.verdicts == sum(sum(c.as_dict().values()) for c in report.criteria.values())
    assert runs.scoring == int(report.scoring.scoring)

    cases = cases_frame(nights.loaded, runs=[run_id]).set_index("case_id")
    assert sorted(cases.index) == sorted(case.case_id for case in report.cases)
    for case in report.cases:
        row = cases.loc[case.case_id]
        assert row.pass_rate == pytest.approx(case.pass_rate)
        assert (bool(row.pass_at_k), bool(row.pass_all_k)) == (case.pass_at_k, case.pass_all_k)
        assert row.attempts == len(case.attempts)

    attempts = attempts_frame(nights.project_file, runs=[run_id])
    graded = [a for case in report.cases for a in case.attempts if a.unrun != "interrupted"]
    assert len(attempts) == len(graded)
    assert attempts.passed.sum() == sum(a.passed for a in graded)
    assert Counter(attempts.unrun.dropna()) == Counter(a.unrun for a in graded if a.unrun)
    assert runs.unrun_attempts == report.unrun.attempts == (1 if run_id == "n3" else 0)

    verdicts = verdicts_frame(nights.project_file, runs=[run_id])
    expected = Counter((v.kind, v.status) for a in graded for v in a.verdicts)
    assert Counter(zip(verdicts.kind, verdicts.status, strict=True)) == expected


def test_no_frame_holds_a_test_case(own_nights: Nights) -> None:
    _with_labels(own_nights)
    for table, make in FRAMES.items():
        frame = make(own_nights.project_file)
        text = frame.to_csv()
        assert SECRET not in text, table
        assert not any(test_id in text for test_id in TEST_IDS), table
    runs = runs_frame(own_nights.project_file)
    assert (runs.test_cases == 2).all()  # counted, never shown


def test_a_case_the_seal_names_is_left_out_whatever_split_a_run_gave_it(
    own_nights: Nights,
) -> None:
    seal = own_nights.directory / "sealed-test.yaml"
    seal.write_text(f"kern-001: '{'0' * 64}'\n", encoding="utf-8")
    frame = verdicts_frame(own_nights.project_file)
    assert "kern-001" not in set(frame.case_id) and "kern-002" in set(frame.case_id)


def test_runs_and_suites_choose_what_is_read(nights: Nights) -> None:
    frame = verdicts_frame(nights.project_file, runs=["n2", "n1"], suites=["privacy"])
    assert list(dict.fromkeys(frame.run_id)) == ["n2", "n1"]
    assert set(frame.suite) == {"privacy"}
    assert list(frame.suite.cat.categories) == ["kern", "privacy"]
    every = runs_frame(nights.project_file)
    assert list(every.run_id) == ["n1", "n2", "n3"]
    assert every.created_at.is_monotonic_increasing and str(every.created_at.dt.tz) == "UTC"


def test_the_latest_scoring_by_default_and_every_one_on_request(nights: Nights) -> None:
    latest = runs_frame(nights.project_file, runs=["n3"])
    every = runs_frame(nights.project_file, runs=["n3"], all_scorings=True)
    assert list(latest.scoring) == [2] and list(every.scoring) == [1, 2]
    verdicts = verdicts_frame(nights.project_file, runs=["n3"], all_scorings=True)
    assert verdicts.groupby("scoring").size().nunique() == 1


@pytest.mark.parametrize(
    ("choose", "message"),
    [
        ({"runs": ["nope"]}, "no run 'nope'"),
        ({"runs": ["Not A Run"]}, "run id 'Not A Run' is not valid"),
        ({"suites": ["kern", "kernel"]}, "has no suite 'kernel' (its suites: kern, privacy)"),
    ],
)
def test_an_unknown_run_or_suite_is_one_clear_error(
    nights: Nights, choose: dict[str, list[str]], message: str
) -> None:
    with pytest.raises(ProjectError, match=message.replace("(", r"\(").replace(")", r"\)")):
        verdicts_frame(nights.project_file, **choose)


def test_a_damaged_verdicts_line_names_the_file_and_the_line(own_nights: Nights) -> None:
    verdicts = own_nights.archive("n1").scorings()[-1] / "verdicts.jsonl"
    lines = verdicts.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = '{"case_id": "kern-002", "broken\n'
    verdicts.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ProjectError, match=rf"{verdicts}: line 2: not a graded attempt"):
        verdicts_frame(own_nights.project_file, runs=["n1"])


def test_the_judge_label_is_read_from_the_detail_of_the_kinds_that_ask_one(
    nights: Nights,
) -> None:
    frame = verdicts_frame(nights.project_file, runs=["n1"])
    judged = frame[frame.kind == "behaviour.expected"]
    assert set(judged.judge_label) == {"answer"}
    assert judged.judge_model.notna().all()
    assert frame[frame.judge_model.isna()].judge_label.isna().all()
    assert judge_label("rubric.judge", "label 'goed' (pass: 'goed'): prima") == "goed"
    assert judge_label("rubric.judge", 'juist: "fout\'s" worth 0 (min 1)') == "fout's"
    assert judge_label("privacy.names", "no name in the reply") == "none"
    assert judge_label("nuggets.coverage", "coverage 1.00 of 2 vital nugget(s)") is None


def test_the_attempts_carry_what_their_evidence_measures(nights: Nights) -> None:
    frame = attempts_frame(nights.project_file, runs=["n1"]).set_index("case_id")
    failed = frame.loc["kern-003"]
    assert failed.failure == "service_unavailable" and pd.isna(failed.reply_chars)
    answered = frame.loc["kern-001"]
    assert answered.citations == 1 and answered.reply_chars > 50
    case = next(case for case in nights.loaded.cases() if case.id == "kern-001")
    every_turn = len(case.turns) + sum(len(variant.turns) for variant in case.variants)
    assert every_turn > answered.turns == len(case.turns)  # the variants count in the usage
    assert answered.prompt_tokens == 40 * every_turn
    assert answered.duration_s == pytest.approx(0.25 * every_turn)


def test_the_labels_of_test_cases_are_left_out(own_nights: Nights) -> None:
    _with_labels(own_nights)
    frame = labels_frame(own_nights.loaded)
    assert list(frame.case_id) == ["priv-001"]
    assert frame.iloc[0].file == str(Path("labels") / "labels.jsonl")
    assert frame.iloc[0].line == 1


def test_a_project_without_runs_gives_empty_frames_of_the_same_types(own_nights: Nights) -> None:
    import shutil

    shutil.rmtree(own_nights.runs)
    for table in ("runs", "cases", "attempts", "verdicts"):
        frame = FRAMES[table](own_nights.project_file)
        assert len(frame) == 0
        assert [str(dtype) for dtype in frame.dtypes] == [c.dtype for c in TABLES[table]]


def test_a_damaged_report_is_one_line_that_names_it(own_nights: Nights) -> None:
    report = own_nights.archive("n1").scorings()[-1] / "report.json"
    report.write_text('{"run_id": "n1", "overall": 3}', encoding="utf-8")
    with pytest.raises(ProjectError) as raised:
        runs_frame(own_nights.project_file, runs=["n1"])
    assert str(raised.value).startswith(f"{report}: not a valid report (")
    assert "\n" not in str(raised.value)
