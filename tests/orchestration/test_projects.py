"""Several projects in one code location: each with its own keys, group, partitions, jobs
and schedule, and the CLI writing to the same keys."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest

from soev_pipeline.cli.main import main
from soev_pipeline.orchestration.definitions import location_for
from soev_pipeline.project.listing import read_projects
from tests.conftest import write_project
from tests.support.thread_api import FakeThreadAPI

REPO = Path(__file__).resolve().parents[2]
ASSETS = {"suites", "judge_prompts", "evidence", "verdicts", "report"}


@pytest.fixture
def listing(tmp_path: Path, system: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two projects, `wet` and `huur`, listed in one file that `$SOEV_PROJECTS` names."""
    write_project(tmp_path / "wet", system.url)
    write_project(tmp_path / "huur", system.url)
    path = tmp_path / "projects.yaml"
    path.write_text(
        "projects:\n  wet: wet/project.yaml\n"
        "  huur:\n    project: huur/project.yaml\n    runs_dir: archive/huur\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("SOEV_PROJECTS", str(path))
    return path


def test_each_project_has_its_own_assets_group_partitions_jobs_and_schedule(
    listing: Path,
) -> None:
    with dg.instance_for_test():
        defs = location_for(read_projects(listing))
        dg.Definitions.validate_loadable(defs)
        graph = defs.resolve_asset_graph()
        keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
        assert keys == {f"{project}/{name}" for project in ("wet", "huur") for name in ASSETS}
        for project in ("wet", "huur"):
            for name in ASSETS:
                node = graph.get(dg.AssetKey([project, name]))
                assert node.group_name == project
            evidence = graph.get(dg.AssetKey([project, "evidence"]))
            assert evidence.partitions_def == dg.DynamicPartitionsDefinition(
                name=f"{project}__runs"
            )
            assert {job.name for job in defs.jobs or []} >= {
                f"{project}__{job}"
                for job in ("evaluate", "rescore", "load_suites", "check_prompts")
            } | {f"{project}__new_evaluation"}
        assert {schedule.name for schedule in defs.schedules or []} == {
            "wet__nightly",
            "huur__nightly",
        }
        sensors = {sensor.name for sensor in defs.sensors or []}
        assert sensors == {
            f"{project}__{name}"
            for project in ("wet", "huur")
            for name in ("prompts_watch", "start_requested_evaluations")
        }
        report = graph.get(dg.AssetKey(["huur", "report"]))
        assert [check.name for check in report.check_keys] == ["no_significant_regression"]


def test_two_projects_with_one_name_are_refused(listing: Path) -> None:
    (first, _) = read_projects(listing)
    with dg.instance_for_test(), pytest.raises(ValueError, match="two projects are named 'wet'"):
        location_for([first, first])


@pytest.mark.e2e
def test_the_cli_writes_to_the_keys_the_location_shows(
    listing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "dagster-home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    home.mkdir()
    huur = tmp_path / "huur" / "project.yaml"
    assert main(["run", "--project", str(huur), "--split", "dev", "--run-id", "r1"]) == 0
    assert main(["rescore", "r1", "--project", str(huur), "--offline"]) == 0
    assert (tmp_path / "archive" / "huur" / "r1" / "manifest.json").exists()
    assert not (tmp_path / "huur" / "runs").exists()

    for name in [key for key in sys.modules if key.startswith("soev_pipeline.orchestration.loc")]:
        monkeypatch.delitem(sys.modules, name)
    from dagster.components import load_defs

    with dg.DagsterInstance.get() as instance:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            location = importlib.import_module("soev_pipeline.orchestration.location")
            defs = load_defs(location, project_root=REPO)
        assert {key.to_user_string() for key in defs.resolve_all_asset_keys()} >= {
            "wet/report",
            "huur/report",
        }
        assert instance.get_dynamic_partitions("huur__runs") == ["r1"]
        assert instance.get_dynamic_partitions("wet__runs") == []
        assert instance.get_dynamic_partitions("runs") == []

        def partitions(key: list[str]) -> list[str | None]:
            records = instance.fetch_materializations(dg.AssetKey(key), limit=10).records
            return [record.partition_key for record in records]

        assert partitions(["huur", "evidence"]) == ["r1"]
        assert partitions(["huur", "verdicts"]) == ["r1", "r1"]  # the run and the rescore
        assert partitions(["huur", "report"]) == ["r1", "r1"]
        assert partitions(["wet", "report"]) == []
        assert partitions(["report"]) == []

        check = defs.resolve_job_def("huur__check_prompts").execute_in_process(instance=instance)
        assert check.success
        (evaluation,) = check.get_asset_check_evaluations()
        assert evaluation.asset_key == dg.AssetKey(["huur", "verdicts"])
        assert evaluation.passed
        assert evaluation.metadata["graded_runs"].value == 1
