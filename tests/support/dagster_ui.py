"""`dg dev` on a project, as a person would run it, and its GraphQL API.

`DagsterUI(project, home)` starts the webserver and the daemon on a free port of 127.0.0.1
for the project (through the repository's workspace.yaml and `$SOEV_PROJECT`), waits until
the code location has loaded, and stops the whole process group afterwards. `cwd` is the
folder it starts in (default: the repository), and so that of its code servers and of the
runs they start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LOCATION = "soev-pipeline"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DagsterUI:
    def __init__(
        self,
        project: Path,
        home: Path,
        *,
        workspace: Path | None = None,
        cwd: Path = REPO,
        **env: str,
    ) -> None:
        self.workspace = workspace or REPO / "workspace.yaml"
        self.cwd = cwd
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "dagster-dev.log"
        self._env = {
            **os.environ,
            "SOEV_PROJECT": str(project),
            "DAGSTER_HOME": str(home),
            **env,
        }

    def __enter__(self) -> DagsterUI:
        dg = Path(sys.executable).with_name("dg")
        command = [str(dg), "dev", "-w", str(self.workspace), "-p", str(self.port)]
        self._log = self.log.open("w")
        self._process = subprocess.Popen(
            command,
            cwd=self.cwd,
            env=self._env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"dg dev ended: {self.log.read_text()[-2000:]}")
            try:
                if self.location_loaded():
                    return self
            except OSError:
                pass
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError("dg dev did not load the code location in time")

    def __exit__(self, *exc: object) -> None:
        try:
            os.killpg(self._process.pid, signal.SIGINT)
            self._process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)
        finally:
            self._log.close()

    def query(self, query: str, **variables: Any) -> Any:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query, "variables": variables}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
        if answer.get("errors"):
            raise RuntimeError(answer["errors"])
        return answer["data"]

    def location_loaded(self) -> bool:
        data = self.query(
            "{ workspaceOrError { ... on Workspace { locationEntries { name "
            "locationOrLoadError { __typename } } } } }"
        )
        entries = data["workspaceOrError"]["locationEntries"]
        return bool(entries) and all(
            entry["locationOrLoadError"]
            and entry["locationOrLoadError"]["__typename"] == "RepositoryLocation"
            for entry in entries
        )

    def launch(
        self,
        job: str,
        run_config: dict[str, Any] | None = None,
        *,
        location: str = LOCATION,
        **tags: str,
    ) -> str:
        params: dict[str, Any] = {
            "selector": {
                "repositoryLocationName": location,
                "repositoryName": "__repository__",
                "jobName": job,
            },
            "runConfigData": run_config or {},
        }
        if tags:
            params["executionMetadata"] = {
                "tags": [{"key": key, "value": value} for key, value in tags.items()]
            }
        data = self.query(
            "mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename "
            "... on LaunchRunSuccess { run { runId } } ... on PythonError { message } "
            "... on RunConfigValidationInvalid { errors { message } } } }",
            p=params,
        )
        answer = data["launchRun"]
        if answer["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(answer)
        return str(answer["run"]["runId"])

    def terminate(self, run_id: str) -> None:
        data = self.query(
            "mutation($runId: String!) { terminateRun(runId: $runId) { __typename "
            "... on PythonError { message } } }",
            runId=run_id,
        )
        if data["terminateRun"]["__typename"] != "TerminateRunSuccess":
            raise RuntimeError(data["terminateRun"])

    def reexecute(self, parent_run_id: str, strategy: str = "ALL_STEPS") -> str:
        """Dagster's "Re-execute all" (`ALL_STEPS`) or "from failure" (`FROM_FAILURE`)."""
        data = self.query(
            "mutation($p: ReexecutionParams!) { launchRunReexecution(reexecutionParams: $p) "
            "{ __typename ... on LaunchRunSuccess { run { runId } } "
            "... on PythonError { message } } }",
            p={"parentRunId": parent_run_id, "strategy": strategy},
        )
        answer = data["launchRunReexecution"]
        if answer["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(answer)
        return str(answer["run"]["runId"])

    def errors(self, run_id: str) -> list[dict[str, Any]]:
        """The errors the UI shows for a run: each failure event's message and stack."""
        data = self.query(
            "query($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection { "
            "events { __typename ... on ExecutionStepFailureEvent { error { message stack "
            "cause { message } } } ... on RunFailureEvent { error { message stack } } } } } }",
            runId=run_id,
        )
        events = data["logsForRun"]["events"]
        return [event["error"] for event in events if event.get("error")]

    def status(self, run_id: str) -> str:
        return next(run["status"] for run in self.runs() if run["runId"] == run_id)

    def runs(self) -> list[dict[str, Any]]:
        data = self.query(
            "{ runsOrError(limit: 100) { ... on Runs { results { runId jobName status "
            "startTime endTime tags { key value } } } } }"
        )
        return list(data["runsOrError"]["results"])

    def wait_for(self, done: Any, timeout: float = 180) -> list[dict[str, Any]]:
        """Poll the runs until `done(runs)` is true; return them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.runs()
            if done(runs):
                return runs
            time.sleep(0.5)
        raise TimeoutError(f"runs did not finish in time: {self.runs()}")
