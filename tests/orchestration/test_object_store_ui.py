"""Dagster without a shared disk: an evaluation launched through the UI's GraphQL API for a
project whose runs are in object storage (moto's S3 server on 127.0.0.1), with `dg dev`,
its code server and the run's process in an empty folder of their own; then the viewer, in
another empty folder, reads the run from the store. No local runs folder is made."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from soev_pipeline.orchestration.instance import ensure_instance
from soev_pipeline.orchestration.new_evaluation import EVALUATE_OP
from tests.conftest import write_project
from tests.support.dagster_ui import DagsterUI
from tests.support.moto import S3
from tests.support.thread_api import FakeThreadAPI, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_instance_left_current")]


def _answer(text: str, history: list[str]) -> Reply:
    return Reply("De termijn is zes weken (artikel 6:7 Awb).", refs=["BWBR0005537/artikel-6:7"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _local_runs_folders(root: Path, instance: Path) -> list[Path]:
    """Every folder called `runs` under `root`, but for Dagster's own run storage in the
    instance folder (`history/runs`)."""
    found = (path for path in root.rglob("runs") if path.is_dir())
    return [path for path in found if not path.is_relative_to(instance)]


def test_a_ui_run_on_object_storage_is_read_by_the_viewer_elsewhere(s3: S3, tmp_path: Path) -> None:
    url = s3.url()
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    with FakeThreadAPI(_answer) as system:
        project = write_project(tmp_path / "project", system.url)
        home = ensure_instance(tmp_path / "home")
        with DagsterUI(project, home, cwd=work, SOEV_RUNS_DIR=url) as ui:
            launched = ui.launch(
                "new_evaluation", {"ops": {EVALUATE_OP: {"config": {"run_id": "ui1"}}}}
            )
            runs = ui.wait_for(
                lambda runs: any(
                    r["runId"] == launched and r["status"] in ("SUCCESS", "FAILURE", "CANCELED")
                    for r in runs
                )
            )
            status = next(r["status"] for r in runs if r["runId"] == launched)
            assert status == "SUCCESS", ui.errors(launched)
    keys = set(s3.keys(url))
    assert {"ui1/manifest.json", "ui1/scorings/0001/report.json"} <= keys, sorted(keys)
    assert _local_runs_folders(tmp_path, home) == []
    assert list(work.iterdir()) == []

    port = _free_port()
    command = [sys.executable, "-m", "soev_pipeline", "view", "--port", str(port)]
    viewer = subprocess.Popen(
        [*command, "--project", str(project), "--runs-dir", url],
        env={**os.environ},
        cwd=elsewhere,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert viewer.stdout is not None
        viewer.stdout.readline()  # its address: it serves
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/ui1", timeout=60) as reply:
            assert reply.status == 200
            assert "ui1" in reply.read().decode()
    finally:
        viewer.terminate()
        viewer.communicate(timeout=30)
    assert _local_runs_folders(tmp_path, home) == []
    assert list(elsewhere.iterdir()) == []
