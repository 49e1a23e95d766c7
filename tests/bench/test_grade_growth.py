"""The corpus breakdown of `bench/grade.py --growth` measures what it says, on a small project."""

from __future__ import annotations

from pathlib import Path

from bench import grade as bench_grade
from bench.synthetic import write_project_with_run


def test_corpus_phases_report_each_phase_and_what_a_worker_copies(tmp_path: Path) -> None:
    write_project_with_run(
        tmp_path,
        seed=7,
        units=300,
        cases=10,
        attempts=40,
        criteria=bench_grade._criteria(),
        run_id=bench_grade.RUN_ID,
    )
    figures = bench_grade.corpus_phases(tmp_path, 40)
    assert figures["units"] == 300
    for phase in ("load", "quotes", "mentions", "lookups"):
        assert figures[f"{phase}_s"] >= 0
        assert figures[f"{phase}_cpu"] >= 0
        assert figures[f"{phase}_mb"] >= figures["start_mb"] > 0
    assert 0 < figures["index_mb_arrays"] < 1
    assert figures["worker_copied_mb"] >= 0
