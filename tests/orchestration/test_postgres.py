"""A shared Dagster instance on a real PostgreSQL server: both forms of connection, the CLI,
the UI with its daemon, the run queue and its per-assistant limit, and no SQLite at all."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from soev_pipeline.orchestration.location import workspace_for
from soev_pipeline.project.listing import read_projects
from tests.conftest import write_project
from tests.support.cli import invoke
from tests.support.dagster_ui import DagsterUI
from tests.support.parts import need
from tests.support.postgres import USER, PostgresServer, available
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    need(available(), "PostgreSQL is not installed")
    with PostgresServer() as running:
        yield running


def _home(root: Path, storage: dict[str, object], **instance: object) -> Path:
    home = root / "dagster-home"
    home.mkdir(parents=True)
    config = {"storage": {"postgres": storage}, "telemetry": {"enabled": False}, **instance}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return home


def _no_sqlite(home: Path) -> None:
    written = [p for p in home.rglob("*") if p.suffix in {".db", ".sqlite"} or "sqlite" in p.name]
    assert written == []


@pytest.mark.parametrize("form", ["postgres_url", "postgres_db"])
def test_run_rescore_and_report_keep_everything_in_postgres(
    form: str,
    server: PostgresServer,
    project_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The documented deploy/dagster.yaml, with its values from the environment; the
    `postgres_url` form replaces its `postgres_db` block, as its comment says."""
    database = f"instance_{form}"
    url = server.create_database(database)
    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text(encoding="utf-8"))
    if form == "postgres_url":
        config["storage"]["postgres"] = {"postgres_url": {"env": "DAGSTER_PG_URL"}}
    home = tmp_path / "dagster-home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for name, value in {
        "DAGSTER_PG_URL": url,
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_PORT": str(server.port),
        "DAGSTER_PG_DB": database,
        "DAGSTER_PG_USER": USER,
        "DAGSTER_PG_PASSWORD": "unused-with-trust-authentication",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    args = ("--project", project_path)
    assert invoke("run", *args, "--run-id", "pg1").status == 0
    assert invoke("rescore", "pg1", *args).status == 0
    report = invoke("report", "pg1", "--json", *args)
    assert report.status == 0 and report.json()["scoring"]["scoring"] == "0002"
    materialized = (
        "select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION' "
        "and asset_key = '[\"report\"]' and partition = 'pg1'"
    )
    assert server.count(database, materialized) == 2
    checks = (
        "select count(*) from asset_check_executions where check_name = 'no_significant_regression'"
    )
    assert server.count(database, checks) == 2  # the run's and the rescore's
    assert server.count(database, "select count(*) from dynamic_partitions") >= 1
    _no_sqlite(home)


def _slow(text: str, history: list[str]) -> Reply:
    time.sleep(0.3)
    return Reply("De termijn is zes weken (artikel 6:7 Awb).", refs=["BWBR0005537/artikel-6:7"])


def test_two_projects_sharing_one_assistant_queue_beside_cli_runs(
    server: PostgresServer, tmp_path: Path
) -> None:
    """Two projects, each a code location, share one assistant. Three evaluations asked for in
    the UI, from both projects, run one at a time by the queue's tag limit on `soev/system`;
    a CLI run goes on beside them. All in PostgreSQL."""
    url = server.create_database("instance_queue")
    limit = {
        "key": "soev/system",
        "value": {"applyLimitPerUniqueValue": True},
        "limit": 1,
    }
    home = _home(
        tmp_path,
        {"postgres_url": url},
        run_coordinator={
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {
                "dequeue_interval_seconds": 1,
                "dequeue_use_threads": True,
                "tag_concurrency_limits": [limit],
            },
        },
    )
    with FakeThreadAPI(_slow) as system:
        wet = write_project(tmp_path / "wet", system.url)
        write_project(tmp_path / "huur", system.url)
        listing = tmp_path / "projects.yaml"
        listing.write_text(
            "projects:\n  wet: wet/project.yaml\n  huur: huur/project.yaml\n", encoding="utf-8"
        )
        workspace = tmp_path / "workspace.yaml"
        workspace.write_text(workspace_for(read_projects(listing)), encoding="utf-8")
        with DagsterUI(wet, home, workspace=workspace, SOEV_PROJECTS=str(listing)) as ui:
            shown = ui.query("{ assetNodes { assetKey { path } groupName } }")
            groups = {tuple(n["assetKey"]["path"]): n["groupName"] for n in shown["assetNodes"]}
            assert groups[("wet", "report")] == "wet" and groups[("huur", "evidence")] == "huur"
            assert len(groups) == 16  # 8 assets a project
            for name in ("wet", "huur"):
                schedules = ui.query(
                    "{ schedulesOrError(repositorySelector: {repositoryLocationName: "
                    f'"{name}", repositoryName: "__repository__"}}) '
                    "{ ... on Schedules { results { name } } } }"
                )
                assert schedules["schedulesOrError"]["results"] == [{"name": "nightly"}]
            asked = [ui.launch("new_evaluation", location=name) for name in ("wet", "huur", "wet")]
            cli = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "soev_pipeline",
                    "run",
                    "--project",
                    str(wet),
                    "--run-id",
                    "cli",
                ],
                env={**os.environ, "DAGSTER_HOME": str(home), "SOEV_PROJECTS": str(listing)},
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )

            def evaluations(runs: list[dict]) -> list[dict]:  # type: ignore[type-arg]
                return [r for r in runs if r["jobName"] == "new_evaluation"]

            def finished(runs: list[dict]) -> bool:  # type: ignore[type-arg]
                started = evaluations(runs)
                return len(started) == 3 and all(
                    r["status"] in ("SUCCESS", "FAILURE") for r in started
                )

            runs = ui.wait_for(finished, timeout=240)
            _, cli_err = cli.communicate(timeout=120)
            assert cli.returncode == 0, cli_err
    started = sorted(evaluations(runs), key=lambda r: r["startTime"])
    assert {r["runId"] for r in started} == set(asked)
    assert [r["status"] for r in started] == ["SUCCESS"] * 3
    assert {_tag(r, "soev/system") for r in started} == {system.url.split("//")[1].rstrip("/")}
    for earlier, later in itertools.pairwise(started):
        assert later["startTime"] >= earlier["endTime"] - 0.5, "two runs used the assistant at once"
    for partitions, count in (("wet__runs", 3), ("huur__runs", 1)):
        query = (
            f"select count(*) from dynamic_partitions where partitions_def_name = '{partitions}'"
        )
        assert server.count("instance_queue", query) == count
    reported = (
        "select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION' "
        "and asset_key = '[\"wet\", \"report\"]' and partition = 'cli'"
    )
    assert server.count("instance_queue", reported) == 1
    _no_sqlite(home)


def _tag(run: dict, key: str) -> str | None:  # type: ignore[type-arg]
    return next((tag["value"] for tag in run["tags"] if tag["key"] == key), None)
