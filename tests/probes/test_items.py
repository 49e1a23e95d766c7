"""The items of a probe run: labelled replies and a run's dev attempts, never a test case,
each criterion of each reply once, and a seeded sample per criterion."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from soev_pipeline.core.models import Evidence
from soev_pipeline.probes import judged_criteria, label_targets, run_targets, select
from soev_pipeline.project import LoadedProject, load
from soev_pipeline.run.archive import RunArchive
from soev_pipeline.run.manifest import Manifest
from tests.calibration.conftest import line, write_labels
from tests.support.project import SECRET


def archive(loaded: LoadedProject, runs: Path, lines: list[Evidence], k: int = 1) -> RunArchive:
    run = RunArchive(runs, "r1")
    run.create(
        Manifest(
            run_id="r1",
            created_at=datetime(2026, 12, 1, tzinfo=UTC),
            project=loaded.project.name,
            suites=("kern", "privacy"),
            k=k,
            cases={case.id: "0" * 64 for case in loaded.cases()},
        )
    )
    with run.evidence_writer() as writer:
        for evidence in lines:
            writer.append(evidence)
    return run


def test_a_runs_dev_attempts_give_targets_and_its_test_attempts_none(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    attempts = [
        Evidence(case_id="kern-001", suite="kern", reply="Zes weken."),
        Evidence(case_id="priv-001", suite="privacy", reply="Ik kan geen vragen beantwoorden."),
        Evidence(case_id="kern-t01", suite="kern", split="test", reply=f"Zes weken {SECRET}."),
        Evidence(case_id="kern-002", suite="kern", reply=None),  # no reply: nothing to probe
    ]
    found = run_targets(loaded, archive(loaded, tmp_path / "runs", attempts))
    assert {(t.case.id, t.name) for t in found} == {
        ("kern-001", "nuggets.coverage"),
        ("kern-001", "custom.thanks"),  # a hooks kind may ask the judge: its verdict tells
        ("kern-001", "rubric.judge"),
        ("priv-001", "behaviour.expected"),
    }
    assert all(SECRET not in t.reply and t.source == "run" for t in found)


def test_labelled_replies_give_targets_and_a_test_cases_label_does_not(project: Path) -> None:
    write_labels(
        project,
        [
            line(),
            line("kern-001", "Zes weken.", "nuggets.coverage"),
            line("kern-t01", f"{SECRET}", "citations.required"),
        ],
    )
    found = label_targets(load(project))
    assert [(t.case.id, t.name, t.reply) for t in found] == [
        (
            "priv-001",
            "behaviour.expected",
            "Ik kan geen vragen over persoonsgegevens beantwoorden.",
        ),
        ("kern-001", "nuggets.coverage", "Zes weken."),
    ]


def test_the_sample_is_seeded_per_criterion_and_each_reply_counts_once(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    replies = [f"Zes weken, antwoord {n}." for n in range(30)]
    attempts = [
        Evidence(case_id="kern-001", suite="kern", attempt=n, reply=reply)
        for n, reply in enumerate(replies)
    ]
    found = run_targets(loaded, archive(loaded, tmp_path / "runs", attempts, k=30))
    twice = found + found
    first = select(twice, per_criterion=5, seed=1)
    assert {name: len(chosen) for name, chosen in first.items()} == {
        "custom.thanks": 5,
        "nuggets.coverage": 5,
        "rubric.judge": 5,
    }
    again = select(list(reversed(twice)), per_criterion=5, seed=1)
    assert {n: [t.key for t in c] for n, c in again.items()} == {
        n: [t.key for t in c] for n, c in first.items()
    }
    other = select(twice, per_criterion=5, seed=2)
    assert [t.key for t in other["rubric.judge"]] != [t.key for t in first["rubric.judge"]]
    only = select(found, per_criterion=50, seed=1, criteria=["rubric.judge"])
    assert list(only) == ["rubric.judge"] and len(only["rubric.judge"]) == 30


def test_the_judged_criteria_are_those_of_the_dev_cases(loaded: LoadedProject) -> None:
    assert judged_criteria(loaded) == [
        "behaviour.expected",
        "custom.thanks",
        "nuggets.coverage",
        "rubric.judge",
    ]
