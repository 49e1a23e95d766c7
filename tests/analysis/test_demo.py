"""The frames of the demo's runs count what `soev-evals report RUN --json` counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from soev_pipeline import evaluate
from soev_pipeline.analysis import attempts_frame, cases_frame, runs_frame, verdicts_frame
from soev_pipeline.project import read_seal
from soev_pipeline.reference import ReferenceServer
from soev_pipeline.run import RunArchive
from soev_pipeline.run.report import read_report
from tests.support.cli import invoke

pytestmark = pytest.mark.e2e
DEMO = Path(__file__).parents[2] / "examples" / "demo" / "project.yaml"


def test_every_demo_run_counts_as_its_report_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    with ReferenceServer(failure_rate=0.15, seed=4) as server:
        monkeypatch.setenv("SOEV_DEMO_URL", server.url)
        evaluate(DEMO, k=1, run_id="d1", runs_dir=runs)
        evaluate(DEMO, k=2, suites=["privacy"], run_id="d2", runs_dir=runs, retry_unrun=False)
    frames = {
        "runs": runs_frame(DEMO, runs_dir=runs).set_index("run_id"),
        "cases": cases_frame(DEMO, runs_dir=runs),
        "attempts": attempts_frame(DEMO, runs_dir=runs),
        "verdicts": verdicts_frame(DEMO, runs_dir=runs),
    }
    for run_id in ("d1", "d2"):
        # d1 as a user reads it; the command adds its calibration, which costs seconds
        if run_id == "d1":
            result = invoke("report", run_id, "--json", "--project", DEMO, "--runs-dir", runs)
            assert result.status == 0, result.err
            report = result.json()
        else:  # the report that `report --json` prints, without its calibration
            report = read_report(RunArchive(runs, run_id)).model_dump(mode="json")
        row = frames["runs"].loc[run_id]
        for key in ("cases", "attempts", "passed_attempts"):
            assert row[key] == report["overall"][key], key
        assert row.unrun_attempts == report["unrun"]["attempts"]
        assert row.test_cases == report["splits"]["test"]["cases"] > 0

        cases = frames["cases"][frames["cases"].run_id == run_id].set_index("case_id")
        assert sorted(cases.index) == sorted(case["case_id"] for case in report["cases"])
        for case in report["cases"]:
            shown = cases.loc[case["case_id"]]
            assert shown.pass_rate == pytest.approx(case["pass_rate"])
            assert shown.attempts == len(case["attempts"])

        attempts = frames["attempts"][frames["attempts"].run_id == run_id]
        graded = [
            attempt
            for case in report["cases"]
            for attempt in case["attempts"]
            if attempt.get("unrun") != "interrupted"
        ]
        assert len(attempts) == len(graded)
        assert attempts.passed.sum() == sum(attempt["passed"] for attempt in graded)

        verdicts = frames["verdicts"][frames["verdicts"].run_id == run_id]
        expected = Counter((v["kind"], v["status"]) for a in graded for v in a["verdicts"])
        assert Counter(zip(verdicts.kind, verdicts.status, strict=True)) == expected
    # about one turn in thirteen ended in a failure event: counted, as the report counts it
    assert frames["attempts"].failure.notna().any()

    sealed = set(read_seal(DEMO.parent) or ())
    assert sealed
    for name, frame in frames.items():
        ids = set(frame.index if name == "runs" else frame.case_id)
        assert not ids & sealed, name
