"""The last probing, saved for the viewer: every trial with both replies and verdicts, written
atomically by `probe_judge`, read back whole, a broken file one line, a test case never kept."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from soev_pipeline.core.errors import OutputPathError, ProjectError
from soev_pipeline.judges import load_prompts
from soev_pipeline.probes import (
    ProbeReport,
    SavedProbing,
    Texts,
    Trial,
    probe_judge,
    probe_targets,
    read_probing,
    save_probing,
)
from soev_pipeline.project import LoadedProject, load, probes_file
from tests.calibration.conftest import line, write_labels
from tests.probes.test_service import biased, targets
from tests.support.project import SECRET


def trials(loaded: LoadedProject) -> tuple[ProbeReport, list[Trial]]:
    found, made = asyncio.run(
        probe_targets(
            loaded,
            targets(loaded),
            biased("option_order"),
            load_prompts(),
            seed=0,
            texts=Texts.of(),
        )
    )
    return ProbeReport(criteria=found, judge_calls=1, cache_hits=2), made


def saved_of(loaded: LoadedProject, report: ProbeReport, made: list[Trial]) -> SavedProbing:
    return SavedProbing(
        project=loaded.project.name,
        probed_at=datetime(2026, 12, 1, tzinfo=UTC),
        prompts_version="v" * 64,
        run_id=None,
        sources={"labels": 6, "run": 0},
        items=20,
        seed=0,
        criteria=None,
        offline=False,
        report=report,
        trials=tuple(trial.saved() for trial in made),
    )


def test_a_probing_round_trips_through_its_file(loaded: LoadedProject, tmp_path: Path) -> None:
    report, made = trials(loaded)
    saved = saved_of(loaded, report, made)
    path = probes_file(tmp_path / ".soev", loaded.project.name)
    save_probing(path, saved)
    assert read_probing(path) == saved
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    by_probe = {(t.criterion, t.probe): t for t in saved.trials}
    reordered = by_probe["rubric.judge", "option_order"]
    assert reordered.options is not None and reordered.probed_options is not None
    assert reordered.probed_options == tuple(reversed(reordered.options))
    assert reordered.direction is not None and reordered.reply == reordered.probed_reply
    padded = by_probe["behaviour.expected", "verbosity"]
    assert padded.probed_reply.startswith(padded.reply) and padded.options is None
    assert padded.direction is None and padded.probed is not None
    assert len({t.id for t in saved.trials}) == len(saved.trials)


def test_a_second_save_replaces_the_first_and_a_symlink_is_refused(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    report, made = trials(loaded)
    path = probes_file(tmp_path, "wetwijzer")
    path.parent.mkdir()
    save_probing(path, saved_of(loaded, report, made))
    save_probing(path, saved_of(loaded, report, made[:1]))
    found = read_probing(path)
    assert found is not None and len(found.trials) == 1
    path.unlink()
    elsewhere = tmp_path / "someone-elses.json"
    elsewhere.write_text("keep", encoding="utf-8")
    path.symlink_to(elsewhere)
    with pytest.raises(OutputPathError, match="symbolic link"):
        save_probing(path, saved_of(loaded, report, made))
    assert elsewhere.read_text(encoding="utf-8") == "keep" and path.is_symlink()


def test_a_test_case_never_reaches_the_file(loaded: LoadedProject) -> None:
    _, made = trials(loaded)
    test_case = next(case for case in loaded.cases() if case.split == "test")
    smuggled = replace(made[0], target=replace(made[0].target, case=test_case))
    with pytest.raises(RuntimeError, match="not a dev case"):
        smuggled.saved()


def test_no_probing_yet_is_none_and_a_broken_one_is_one_line(
    loaded: LoadedProject, tmp_path: Path
) -> None:
    path = tmp_path / "probes" / "wetwijzer.json"
    assert read_probing(path) is None
    path.parent.mkdir()
    path.write_text('{"format": 1, "project": "wetwijzer"}', encoding="utf-8")
    with pytest.raises(ProjectError, match=r"wetwijzer\.json: not a probing of probe-judge"):
        read_probing(path)
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(ProjectError, match="run soev-evals probe-judge again"):
        read_probing(path)
    path.unlink()
    path.mkdir()
    with pytest.raises(ProjectError, match="not a regular file"):
        read_probing(path)
    empty = ProbeReport(criteria={}, judge_calls=0, cache_hits=0)
    with pytest.raises(ProjectError, match="not a regular file"):
        save_probing(path, saved_of(loaded, empty, []))


def test_probe_judge_saves_what_it_found(project: Path) -> None:
    write_labels(project, [line(), line("kern-t01", SECRET, "citations.required")])
    loaded = load(project)
    state = project.parent / ".soev"
    probing = asyncio.run(probe_judge(loaded, state, project.parent / "runs", offline=True))
    path = probes_file(state, "wetwijzer")
    saved = read_probing(path)
    assert saved is not None and saved.project == "wetwijzer"
    assert saved.report == probing.report and saved.offline and saved.items == 20
    assert saved.prompts_version == loaded.prompts_version
    assert {(t.case_id, t.criterion, t.source) for t in saved.trials} == {
        ("priv-001", "behaviour.expected", "labels")
    }
    assert all(t.original.status == "error" and t.probed is None for t in saved.trials)
    assert SECRET not in path.read_text(encoding="utf-8")


def test_probe_judge_with_nothing_to_probe_saves_an_empty_probing(project: Path) -> None:
    state = project.parent / ".soev"
    asyncio.run(probe_judge(load(project), state, project.parent / "runs"))
    raw = json.loads(probes_file(state, "wetwijzer").read_text(encoding="utf-8"))
    assert raw["trials"] == [] and raw["report"]["criteria"] == {}
