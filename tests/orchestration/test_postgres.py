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

from tests.conftest import write_project
from tests.support.cli import invoke
from tests.support.dagster_ui import DagsterUI
from tests.support.postgres import USER, PostgresServer, available
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not available(), reason="PostgreSQL is not installed (.ci/run installs it)"),
]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
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
    assert server.count(database, "select count(*) from runs where status = 'SUCCESS'") >= 3
    materialized = (
        "select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION' "
        "and asset_key = '[\"report\"]' and partition = 'pg1'"
    )
    assert server.count(database, materialized) == 2
    checks = (
        "select count(*) from asset_check_executions where check_name = 'no_significant_regression'"
    )
    assert server.count(database, checks) == 2
    assert server.count(database, "select count(*) from dynamic_partitions") >= 1
    _no_sqlite(home)


def _slow(text: str, history: list[str]) -> Reply:
    time.sleep(0.3)
    return Reply("De termijn is zes weken (artikel 6:7 Awb).", refs=["BWBR0005537/artikel-6:7"])


def test_two_projects_sharing_one_assistant_queue_beside_cli_runs(
    server: PostgresServer, tmp_path: Path
) -> None:
    """Two projects in one location share one assistant. Three evaluations asked for in the
    UI, from both projects, run one at a time by the queue's tag limit on `soev/system`; a
    CLI run goes on beside them. All in PostgreSQL."""
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
        evaluate_jobs = {"wet__evaluate", "huur__evaluate"}
        with DagsterUI(wet, home, SOEV_PROJECTS=str(listing)) as ui:
            shown = ui.query(
                "{ assetNodes { assetKey { path } groupName } "
                'schedulesOrError(repositorySelector: {repositoryLocationName: "soev-pipeline", '
                'repositoryName: "__repository__"}) { ... on Schedules { results { name } } } }'
            )
            groups = {tuple(n["assetKey"]["path"]): n["groupName"] for n in shown["assetNodes"]}
            assert groups[("wet", "report")] == "wet" and groups[("huur", "evidence")] == "huur"
            assert len(groups) == 10
            schedules = {s["name"] for s in shown["schedulesOrError"]["results"]}
            assert schedules == {"wet__nightly", "huur__nightly"}
            jobs = ["wet__new_evaluation", "huur__new_evaluation", "wet__new_evaluation"]
            asked = [ui.launch(job) for job in jobs]
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

            def from_ui(runs: list[dict]) -> list[dict]:  # type: ignore[type-arg]
                return [
                    r
                    for r in runs
                    if r["jobName"] in evaluate_jobs and _tag(r, "soev/launched_by") != "cli"
                ]

            def finished(runs: list[dict]) -> bool:  # type: ignore[type-arg]
                evaluations = from_ui(runs)
                return len(evaluations) == 3 and all(
                    r["status"] in ("SUCCESS", "FAILURE") for r in evaluations
                )

            runs = ui.wait_for(finished, timeout=240)
            _, cli_err = cli.communicate(timeout=120)
            assert cli.returncode == 0, cli_err
    requests = [r for r in runs if r["runId"] in asked]
    assert [r["status"] for r in requests] == ["SUCCESS"] * 3
    evaluations = sorted(from_ui(runs), key=lambda r: r["startTime"])
    assert [r["status"] for r in evaluations] == ["SUCCESS"] * 3
    assert sorted(r["jobName"] for r in evaluations) == [
        "huur__evaluate",
        "wet__evaluate",
        "wet__evaluate",
    ]
    assert {_tag(r, "soev/system") for r in evaluations} == {system.url.split("//")[1].rstrip("/")}
    for earlier, later in itertools.pairwise(evaluations):
        assert later["startTime"] >= earlier["endTime"] - 0.5, "two runs used the assistant at once"
    cli_runs = [r for r in runs if _tag(r, "soev/launched_by") == "cli"]
    assert {r["jobName"] for r in cli_runs} >= {"wet__evaluate"}
    assert server.count("instance_queue", "select count(*) from runs where status = 'SUCCESS'") >= 7
    assert (
        server.count(
            "instance_queue",
            "select count(*) from dynamic_partitions where partitions_def_name = 'wet__runs' "
            "and partition = 'cli'",
        )
        == 1
    )
    _no_sqlite(home)


def _tag(run: dict, key: str) -> str | None:  # type: ignore[type-arg]
    return next((tag["value"] for tag in run["tags"] if tag["key"] == key), None)
