"""Several projects in one Dagster instance: each a code location of its own, with its own
asset keys, group and run partitions; the CLI writes to the same keys."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import dagster as dg
import pytest
import yaml

from soev_pipeline.cli.main import main
from soev_pipeline.orchestration.location import definitions as location
from soev_pipeline.orchestration.location import workspace_for
from soev_pipeline.project.listing import read_projects
from tests.conftest import write_project
from tests.support.thread_api import FakeThreadAPI

pytestmark = pytest.mark.usefixtures("no_instance_left_current")

ASSETS = {
    "suites",
    "judge_prompts",
    "evidence",
    "verdicts",
    "report",
    "labels",
    "judge_calibration",
    "judge_probes",
}


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
    location.listed.cache_clear()
    return path


def test_each_listed_project_is_a_location_with_its_own_keys_group_and_partitions(
    listing: Path,
) -> None:
    with dg.instance_for_test():
        for project in ("wet", "huur"):
            defs = getattr(location, project)
            dg.Definitions.validate_loadable(defs)
            graph = defs.resolve_asset_graph()
            keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
            assert keys == {f"{project}/{name}" for name in ASSETS}
            assert {graph.get(dg.AssetKey([project, name])).group_name for name in ASSETS} == {
                project
            }
            evidence = graph.get(dg.AssetKey([project, "evidence"]))
            assert evidence.partitions_def == dg.DynamicPartitionsDefinition(
                name=f"{project}__runs"
            )
            # within its own location, a project's jobs, sensors and schedule have plain names
            assert {job.name for job in defs.jobs or []} >= {
                "evaluate",
                "rescore",
                "load_suites",
                "check_prompts",
                "new_evaluation",
            }
            assert [schedule.name for schedule in defs.schedules or []] == ["nightly"]
            report = graph.get(dg.AssetKey([project, "report"]))
            assert [check.name for check in report.check_keys] == ["no_significant_regression"]


def _fresh_location(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The location module imported anew, as a code location process imports it."""
    for name in [key for key in sys.modules if key.startswith("soev_pipeline.orchestration.loc")]:
        monkeypatch.delitem(sys.modules, name)
    return importlib.import_module("soev_pipeline.orchestration.location.definitions")


def test_the_location_module_serves_listed_projects_by_name_only(
    listing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _fresh_location(monkeypatch)
    assert "defs" not in vars(module)  # no project is loaded that the location does not serve
    with pytest.raises(AttributeError, match="serve each as a code location"):
        module.defs  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'grond'"):
        module.grond  # noqa: B018
    workspace = yaml.safe_load(workspace_for(read_projects(listing)))
    assert workspace == {
        "load_from": [
            {
                "python_module": {
                    "module_name": "soev_pipeline.orchestration.location.definitions",
                    "attribute": name,
                    "location_name": name,
                }
            }
            for name in ("wet", "huur")
        ]
    }


@pytest.mark.e2e
def test_the_cli_writes_to_the_keys_the_location_shows(
    listing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "dagster-home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    home.mkdir()
    huur = tmp_path / "huur" / "project.yaml"
    monkeypatch.setenv("SOEV_VIEW_URL", "http://127.0.0.1:8766/")  # another project's viewer
    monkeypatch.setenv("SOEV_VIEW_URL_HUUR", "http://127.0.0.1:8767/")
    assert main(["run", "--project", str(huur), "--split", "dev", "--run-id", "r1"]) == 0
    assert main(["rescore", "r1", "--project", str(huur), "--offline"]) == 0
    assert (tmp_path / "archive" / "huur" / "r1" / "manifest.json").exists()
    assert not (tmp_path / "huur" / "runs").exists()

    defs = _fresh_location(monkeypatch).huur
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("huur__runs") == ["r1"]
        assert instance.get_dynamic_partitions("wet__runs") == []
        assert instance.get_dynamic_partitions("runs") == []

        def partitions(key: list[str]) -> list[str | None]:
            records = instance.fetch_materializations(dg.AssetKey(key), limit=10).records
            return [record.partition_key for record in records]

        assert partitions(["huur", "evidence"]) == ["r1"]
        (report,) = instance.fetch_materializations(
            dg.AssetKey(["huur", "report"]), limit=1
        ).records
        assert report.asset_materialization is not None
        viewer = report.asset_materialization.metadata["viewer"].value
        assert viewer == "http://127.0.0.1:8767/runs/r1"  # its own viewer's page of the run
        assert partitions(["huur", "verdicts"]) == ["r1", "r1"]  # the run and the rescore
        assert partitions(["huur", "report"]) == ["r1", "r1"]
        assert partitions(["wet", "report"]) == []
        assert partitions(["report"]) == []

        check = defs.resolve_job_def("check_prompts").execute_in_process(instance=instance)
        assert check.success
        (evaluation,) = [
            found
            for found in check.get_asset_check_evaluations()
            if found.check_name == "graded_with_current_prompts"
        ]
        assert evaluation.asset_key == dg.AssetKey(["huur", "verdicts"])
        assert evaluation.passed
        assert evaluation.metadata["graded_runs"].value == 1
