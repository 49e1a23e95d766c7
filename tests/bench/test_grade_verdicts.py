"""Grading the bench's workload writes the verdicts it wrote before grading got faster.

The digest below is of `verdicts.jsonl` as the grading code wrote it before its per-attempt
cost was cut (a cached sentence walk in the language detector, bound criteria, cheaper
verdicts): a change that alters one byte of one verdict, on a workload that uses every
built-in kind needing no judge, fails here. A deliberate change of a verdict changes the
digest, with a note in the commit saying why.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from bench import grade as bench_grade
from bench.synthetic import write_project_with_run
from soev_pipeline.core.models import STATUSES
from soev_pipeline.core.ports import CriterionContext
from soev_pipeline.judges import LangidDetector
from soev_pipeline.project import load
from soev_pipeline.run import RunArchive, grade_evidence

EXPECTED = "60e83ac9d530a74ca5e7fea3414461b66f1fbfffe6c16f0b0fbbb5f78538901a"
"""sha256 of verdicts.jsonl for seed 7, 400 units, 60 cases, 240 attempts (a change of
`bench/synthetic.py` changes the workload, and so this digest, too)."""


@pytest.mark.parametrize("workers", [1, 2])
def test_the_bench_workload_grades_to_the_frozen_verdicts(tmp_path: Path, workers: int) -> None:
    write_project_with_run(
        tmp_path,
        seed=7,
        units=400,
        cases=60,
        attempts=240,
        criteria=bench_grade._criteria(),
        run_id="bench",
    )
    loaded = load(tmp_path / "project.yaml")
    ctx = CriterionContext(
        messages=loaded.context.messages,
        corpus=loaded.context.corpus,
        language_detector=LangidDetector(),
    )
    evidence = list(RunArchive(tmp_path / "runs", "bench").iter_attempts())
    scoring = tmp_path / "scoring"
    scoring.mkdir()
    work = grade_evidence(loaded, ctx, evidence, scoring, total=len(evidence), workers=workers)
    summary = asyncio.run(work)
    assert summary.attempts == 240
    assert len(summary.criterion_versions) == len(bench_grade._criteria())
    assert all(summary.statuses[status] > 0 for status in STATUSES)
    digest = hashlib.sha256((scoring / "verdicts.jsonl").read_bytes()).hexdigest()
    assert digest == EXPECTED
