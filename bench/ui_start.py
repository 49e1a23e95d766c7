"""How soon does a run launched from the Dagster UI start?

Starts the bundled reference assistant and `dg dev -w workspace.yaml` as `make ui`
does, on a temporary copy of the demo project with a fresh instance (`ensure_instance`, so
the instance config soev-pipeline writes: runs launch at once, without a queue), waits
until the code location and the sensor daemon are up, and then launches runs one at a time
through the webserver's GraphQL API, the calls the launchpad makes:

- request: Jobs → `new_evaluation` → Launch run, the documented way to start a new
  evaluation; the run adds the run partition and evaluates it itself;
- direct: "Add partition" and Launch run on `evaluate`, with the partition tag.

For every run it reads the run's records in that instance and prints, from the launch
call, when the run was queued (with a queue), launched (STARTING), started (its process has imported
Dagster and loaded the project: the run's start time) and finished, as median, min and max.

    python bench/ui_start.py                    # both ways, 5 runs each
    python bench/ui_start.py --repeat 3 --way request

Target: "A UI-launched run starts within 2 s" (the median of launch → started). The figures
are mostly process start-up, so run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import httpx
import sqlalchemy.exc

from soev_pipeline.orchestration.assets import attempt_grade_aggregate
from soev_pipeline.orchestration.config import NewEvaluationConfig, RunConfig
from soev_pipeline.orchestration.instance import ensure_instance
from soev_pipeline.orchestration.new_evaluation import EVALUATE_OP

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from reference import reference_assistant

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 2.0
DEMO = ROOT / "examples" / "demo"
REPOSITORY = {"repositoryLocationName": "soev-pipeline", "repositoryName": "__repository__"}
SENSOR = "prompts_watch"
PARTITION = "dagster/partition"
EVENTS = {
    dg.DagsterEventType.RUN_ENQUEUED: "queued",
    dg.DagsterEventType.RUN_STARTING: "launched",
    dg.DagsterEventType.RUN_START: "started",
    dg.DagsterEventType.RUN_SUCCESS: "finished",
}
WAYS = ("request", "direct")
T = TypeVar("T")
Moments = dict[str, float]
"""Seconds from the launch call to each moment of a run, by name."""

LAUNCH = """
mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on Error { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
ADD_PARTITION = """
mutation($r: RepositorySelector!, $d: String!, $k: String!) {
  addDynamicPartition(repositorySelector: $r, partitionsDefName: $d, partitionKey: $k) {
    __typename ... on Error { message } } }"""
LOCATIONS = """
{ workspaceOrError { ... on Workspace { locationEntries { name
  locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
DAEMONS = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"
SENSOR_TICKS = """
query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { __typename
  ... on Sensor { sensorState { ticks(limit: 1) { status } } } } }"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(what: str, check: Callable[[], T | None], timeout: float, log: Path) -> T:
    """Poll `check` until it returns something; a one-line SystemExit after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except (httpx.HTTPError, sqlalchemy.exc.OperationalError):  # not up yet; a locked db
            found = None
        if found is not None:
            return found
        time.sleep(0.2)
    raise SystemExit(f"{what} within {timeout:.0f} s (dg dev's log: {last_line(log)})")


def last_line(log: Path) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))  # no colours
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "empty"


def descendants(root: int) -> list[int]:
    """The process ids below `root`, from /proc (empty where there is none)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    pending = [root]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


class DgDev:
    """`dg dev` on a project in its own process group, and its GraphQL API."""

    def __init__(self, project: Path, home: Path, assistant: str) -> None:
        self.port = free_port()
        self.log = home / "dagster-dev.log"
        ignored = {"SOEV_PROJECTS", "SOEV_RUNS_DIR", "DAGSTER_HOME"}
        self.env = {key: value for key, value in os.environ.items() if key not in ignored}
        self.env |= {
            "SOEV_PROJECT": str(project),
            "SOEV_DEMO_URL": assistant,
            "DAGSTER_HOME": str(home),
        }
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    @contextmanager
    def running(self, timeout: float) -> Iterator[DgDev]:
        dg = Path(sys.executable).with_name("dg")
        command = [str(dg), "dev", "-w", str(ROOT / "workspace.yaml"), "-p", str(self.port)]
        with self.log.open("w") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                self.process = process
                self.wait_ready(timeout)
                yield self
            finally:
                self.stop(process)

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        """Stop dg dev, its webserver, daemon, code server and run workers."""
        below = descendants(process.pid)
        try:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        for pid in [-process.pid, *below]:  # what is left of the group, and who left it
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)
        self.client.close()

    def query(self, query: str, **variables: Any) -> Any:
        response = self.client.post("/graphql", json={"query": query, "variables": variables})
        response.raise_for_status()
        answer = response.json()
        if answer.get("errors"):
            raise SystemExit(f"GraphQL error: {answer['errors'][0].get('message')}")
        return answer["data"]

    def wait_ready(self, timeout: float) -> None:
        """Until the location has loaded, the sensor daemon (and the queue's) is healthy and
        the project's watch has ticked once (it records the suites and prompts of a new
        instance: those runs are done before the measured ones start)."""

        def location() -> bool | None:
            if self.process.poll() is not None:
                raise SystemExit(f"dg dev ended: {last_line(self.log)}")
            entries = self.query(LOCATIONS)["workspaceOrError"]["locationEntries"]
            loaded = [entry["locationOrLoadError"] or {} for entry in entries]
            for entry in loaded:
                if entry.get("__typename") == "PythonError":
                    message = entry["message"].strip().splitlines()[-1]
                    raise SystemExit(f"the code location did not load: {message}")
            return any(e.get("__typename") == "RepositoryLocation" for e in loaded) or None

        def daemons() -> bool | None:
            health = self.query(DAEMONS)["instance"]["daemonHealth"]["allDaemonStatuses"]
            up = {status["daemonType"] for status in health if status["healthy"]}
            needed = {"SENSOR"}  # and the run queue's daemon, when the instance has a queue
            needed |= {"QUEUED_RUN_COORDINATOR"} & {status["daemonType"] for status in health}
            return needed <= up or None

        def sensor() -> bool | None:
            answer = self.query(SENSOR_TICKS, s={**REPOSITORY, "sensorName": SENSOR})
            found = answer["sensorOrError"]
            if found["__typename"] != "Sensor":
                raise SystemExit(f"no sensor {SENSOR} in the code location: {found}")
            return bool(found["sensorState"]["ticks"]) or None

        started = time.monotonic()
        wait_until("dg dev did not load the code location", location, timeout, self.log)
        left = max(timeout - (time.monotonic() - started), 30)
        wait_until(
            "the sensor daemon (and the run queue's) was not healthy", daemons, left, self.log
        )
        wait_until(f"the sensor {SENSOR} did not tick", sensor, left, self.log)

    def add_partition(self, key: str) -> None:
        answer = self.query(ADD_PARTITION, r=REPOSITORY, d="runs", k=key)["addDynamicPartition"]
        if answer["__typename"] != "AddDynamicPartitionSuccess":
            raise SystemExit(f"adding the partition {key} failed: {answer.get('message')}")

    def launch(self, job: str, run_config: dict[str, Any], tags: dict[str, str]) -> str:
        params = {
            "selector": {**REPOSITORY, "jobName": job},
            "runConfigData": run_config,
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        answer = self.query(LAUNCH, p=params)["launchRun"]
        if answer["__typename"] != "LaunchRunSuccess":
            reason = answer.get("message") or "; ".join(e["message"] for e in answer["errors"])
            raise SystemExit(f"launching {job} failed: {reason}")
        return str(answer["run"]["runId"])


class Runs:
    """The run records of the instance that dg dev uses."""

    def __init__(self, instance: dg.DagsterInstance, log: Path, timeout: float) -> None:
        self.instance, self.log, self.timeout = instance, log, timeout

    def finished(self, run_id: str, job: str) -> None:
        """Wait for the run to end; a one-line SystemExit unless it succeeded."""

        def ended() -> dg.DagsterRun | None:
            run = self.instance.get_run_by_id(run_id)
            return run if run is not None and run.is_finished else None

        run = wait_until(f"{job} run {run_id} did not finish", ended, self.timeout, self.log)
        if not run.is_success:
            failures = self.instance.all_logs(
                run_id,
                of_type={dg.DagsterEventType.RUN_FAILURE, dg.DagsterEventType.STEP_FAILURE},
            )
            reason = failures[-1].message if failures else "no failure event"
            raise SystemExit(f"{job} run {run_id} ended {run.status.value}: {reason}")

    def settled(self) -> None:
        """Until no run is queued or running (the watch's first runs, say)."""

        def idle() -> bool | None:
            busy = dg.RunsFilter(
                statuses=[
                    dg.DagsterRunStatus.QUEUED,
                    dg.DagsterRunStatus.STARTING,
                    dg.DagsterRunStatus.STARTED,
                ]
            )
            return not self.instance.get_run_records(busy, limit=1) or None

        wait_until("runs were still going", idle, self.timeout, self.log)

    def moments(self, run_id: str, launched: float, prefix: str = "") -> Moments:
        """Seconds from `launched` to each status of the run, from its events."""
        entries = self.instance.all_logs(run_id, of_type=set(EVENTS))
        found: Moments = {}
        for entry in entries:
            assert entry.dagster_event is not None
            found[EVENTS[entry.dagster_event.event_type]] = entry.timestamp - launched
        missing = set(EVENTS.values()) - set(found) - {"queued"}  # no queue: not queued
        if missing:
            raise SystemExit(f"run {run_id} has no event for {', '.join(sorted(missing))}")
        order = list(EVENTS.values())
        return {f"{prefix}{name}": found[name] for name in order if name in found}


def request_way(ui: DgDev, runs: Runs, partition: str) -> Moments:
    """Launch `new_evaluation` as the launchpad scaffolds it: the run evaluates itself."""
    runs.settled()
    config = {**NewEvaluationConfig().model_dump(mode="json"), "run_id": partition}
    launched = time.time()
    request = ui.launch("new_evaluation", {"ops": {EVALUATE_OP: {"config": config}}}, {})
    call = time.time() - launched
    runs.finished(request, "new_evaluation")
    return {"launch call": call, **runs.moments(request, launched, "new_evaluation ")}


def direct_way(ui: DgDev, runs: Runs, partition: str) -> Moments:
    """Add the run partition, then launch `evaluate` on it with the launchpad's config."""
    runs.settled()
    ui.add_partition(partition)
    # the launchpad's scaffold: the step's name and every field at its default
    config = {
        "ops": {attempt_grade_aggregate.op.name: {"config": RunConfig().model_dump(mode="json")}}
    }
    launched = time.time()
    evaluate = ui.launch("evaluate", config, {PARTITION: partition})
    call = time.time() - launched
    runs.finished(evaluate, "evaluate")
    return {"launch call": call, **runs.moments(evaluate, launched, "evaluate ")}


def measure(ways: list[str], repeat: int, timeout: float, keep: bool) -> dict[str, list[Moments]]:
    measured: dict[str, list[Moments]] = {way: [] for way in ways}
    folder = Path(tempfile.mkdtemp(prefix="soev-ui-start-"))
    try:
        project = folder / "demo" / "project.yaml"
        shutil.copytree(DEMO, project.parent, ignore=shutil.ignore_patterns("runs", ".soev"))
        home = ensure_instance(folder / "dagster-home")
        with reference_assistant() as assistant:
            ui = DgDev(project, home, assistant)
            started = time.monotonic()
            with ui.running(timeout):
                ready = time.monotonic() - started
                print(f"dg dev ready in {ready:.1f} s on port {ui.port}", file=sys.stderr)
                with dg.DagsterInstance.from_config(str(home)) as instance:
                    runs = Runs(instance, ui.log, timeout)
                    for number in range(1, repeat + 1):
                        for way in ways:
                            run = (request_way if way == "request" else direct_way)(
                                ui, runs, f"ui-start-{way}-{number}"
                            )
                            measured[way].append(run)
                            job = "new_evaluation" if way == "request" else "evaluate"
                            print(
                                f"{way} {number}/{repeat}: {job} started after "
                                f"{run[f'{job} started']:.2f} s, finished after "
                                f"{run[f'{job} finished']:.2f} s",
                                file=sys.stderr,
                            )
    finally:
        if keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return measured


def table(title: str, runs: list[Moments]) -> None:
    print(f"\n{title} ({len(runs)} runs, seconds from the launch call)")
    print(f"  {'':<34}{'median':>8}{'min':>8}{'max':>8}")
    for name in runs[0]:
        values = [run[name] for run in runs if name in run]
        if not values:
            continue
        label = name if name == "launch call" else f"→ {name}"
        print(
            f"  {label:<34}{statistics.median(values):>8.2f}{min(values):>8.2f}{max(values):>8.2f}"
        )


def verdict(label: str, seconds: float) -> None:
    judged = "within" if seconds <= GOAL_S else "over"
    print(f"  {label:<34}{seconds:>8.2f} s  {judged} the {GOAL_S:g} s goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per way (median)")
    parser.add_argument("--way", choices=[*WAYS, "both"], default="both")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds to wait for dg dev, or a run"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary project, instance and log"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    ways = list(WAYS) if args.way == "both" else [args.way]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        measured = measure(ways, args.repeat, args.timeout, args.keep)
    except KeyboardInterrupt:
        print("interrupted: stopped dg dev and the assistant", file=sys.stderr)
        sys.exit(130)
    print(
        f"\nUI-launched runs of the demo project: dagster {dg.__version__}, "
        f"{os.cpu_count()} CPUs, one run at a time"
    )
    if "request" in measured:
        table("request: new_evaluation, which evaluates itself", measured["request"])
    if "direct" in measured:
        table("direct: evaluate on a partition added in the UI", measured["direct"])
    print(f"\ngoal: a UI-launched run starts within {GOAL_S:g} s (median launch → started)")
    if "request" in measured:
        runs = measured["request"]
        verdict("new_evaluation", statistics.median(r["new_evaluation started"] for r in runs))
    if "direct" in measured:
        verdict("evaluate", statistics.median(r["evaluate started"] for r in measured["direct"]))


if __name__ == "__main__":
    main()
