"""How do inspect_ai and promptfoo compare with soev-evals on one workload?

Runs the workload of bench/throughput.py, N one-turn attempts at concurrency C against the
bundled reference assistant with a fixed latency, through five runners in turn (`--repeat`
times, reporting the median) and prints each one's wall time and its ratio to the bare loop
as a markdown table (`--json` for machines). Every runner does the same HTTP work per
attempt: open a thread (`POST v1/chat/threads`, `Accept: text/event-stream`, body
`{input: {text}, agent: "bench"}`), read the event stream to the turn's `status` event, then
`DELETE v1/chat/threads/{id}`. The text is the case input of soev-evals' generated suite
(a question and its number); the bare loop sends the question alone.

- bare httpx loop: throughput.bare_loop, C workers sharing one httpx.AsyncClient, in this
  process; nothing but the HTTP work.
- bare loop, httpx over aiohttp: the same loop on the transport soev-evals sends with
  (soev_pipeline.core.transport), the stricter baseline.
- soev-evals run: throughput.run_harness on the project of throughput.write_project (its
  Dagster instance made beforehand): SoevThreadArm, criteria run.no_failure and
  usage.max_tokens, evidence and report written.
- inspect eval: bench/peers/inspect_task.py, whose model API ("soev/thread") does an attempt
  per generate() with one httpx.AsyncClient, one sample per attempt, generate() as solver,
  includes() ("artikel") as scorer, --max-connections C --max-samples C, the default display
  and log format (.eval) in a temporary INSPECT_LOG_DIR. No other model is called.
- promptfoo eval: bench/peers/promptfooconfig.yaml with the custom provider
  bench/peers/provider.mjs, which does an attempt per test with Node's fetch (it reads the
  stream to its end, which comes right after `status`), one test per attempt, an icontains
  ("artikel") assertion, maxConcurrency C, --no-cache, results written to its database in a
  temporary PROMPTFOO_CONFIG_DIR and to -o results.json. Telemetry, update checks, sharing
  and remote generation are off; promptfoo still posts one "telemetry disabled" event, whose
  DNS lookup fails at once here and which it does not wait for.

The peers and `soev-evals run` are timed as whole commands, start-up included, with their
output sent to a file or discarded; each peer run is killed past `--timeout`. "failed
attempts" counts attempts that ended in an error (not scores). The peers are installed
outside the product's dependencies, under .bench/peers/ (gitignored), by

    .venv/bin/python bench/peers.py --setup

which runs

    python -m venv .bench/peers/venv
    .bench/peers/venv/bin/python -m pip install inspect-ai==0.3.285
    npm install --prefix .bench/peers/node --save-exact --no-audit --no-fund promptfoo@0.121.20

promptfoo 0.121.20 is the last release that runs on Node 20 (0.122 needs Node 22.22).
Then, with the product's venv:

    .venv/bin/python bench/peers.py                   # 500 ms, concurrency 16, 400 attempts
    .venv/bin/python bench/peers.py --scenario fast   # 50 ms, concurrency 32, 2,000 attempts
    .venv/bin/python bench/peers.py --repeat 3 --json # medians of three runs, as JSON
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import yaml
from throughput import (
    SCENARIOS,
    bare_loop,
    prepare_instance,
    run_harness,
    start_assistant,
    write_project,
)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().with_name("peers")
PEERS = ROOT / ".bench" / "peers"
VENV = PEERS / "venv"
NODE = PEERS / "node"
INSPECT = VENV / "bin" / "inspect"
PROMPTFOO = NODE / "node_modules" / ".bin" / "promptfoo"
INSPECT_AI_VERSION = "0.3.285"
PROMPTFOO_VERSION = "0.121.20"
PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_RUNTIME_WARNINGS": "1",
    "PROMPTFOO_CACHE_ENABLED": "false",
}


class RunnerError(Exception):
    """A peer's run that timed out, failed or did not do every attempt."""


@dataclass
class Workload:
    folder: Path
    url: str
    concurrency: int
    attempts: int
    timeout_s: float
    project: Path
    inputs: list[str]
    """The questions of soev-evals' suite, one per attempt, for the peers to send."""


def prepare(folder: Path, url: str, concurrency: int, attempts: int, timeout_s: float) -> Workload:
    """Write soev-evals' project and make its instance, as throughput.scenario does."""
    project = write_project(folder, url, attempts, concurrency)
    prepare_instance(folder / "dagster-home")
    suite = yaml.safe_load((folder / "suites" / "bench.yaml").read_text("utf-8"))
    inputs = [case["input"] for case in suite["cases"]]
    return Workload(folder, url, concurrency, attempts, timeout_s, project, inputs)


@dataclass
class Runner:
    name: str
    version: str
    run: Callable[[Workload, int], tuple[float, int]]
    """Wall seconds and failed attempts of the `number`th run."""


@dataclass
class Row:
    runner: str
    version: str
    walls_s: list[float] = field(default_factory=list)
    failed: int = 0
    error: str | None = None

    @property
    def wall_s(self) -> float | None:
        return statistics.median(self.walls_s) if self.walls_s else None


def setup() -> None:
    """Install the peers under .bench/peers/, apart from the product's venv."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not on PATH; install Node.js 20.20 or newer")
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"inspect-ai=={INSPECT_AI_VERSION}"], check=True)
    npm_flags = ["--save-exact", "--no-audit", "--no-fund"]
    install = [npm, "install", "--prefix", str(NODE), *npm_flags, f"promptfoo@{PROMPTFOO_VERSION}"]
    subprocess.run(install, check=True)
    print(f"installed inspect-ai {inspect_version()}, promptfoo {promptfoo_version()}")


def inspect_version() -> str | None:
    found = sorted(VENV.glob("lib/python*/site-packages/inspect_ai-*.dist-info"))
    return found[-1].name.removeprefix("inspect_ai-").removesuffix(".dist-info") if found else None


def promptfoo_version() -> str | None:
    package = NODE / "node_modules" / "promptfoo" / "package.json"
    if not package.exists():
        return None
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return f"{json.loads(package.read_text('utf-8'))['version']} on Node {node}"


def timed(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> float:
    """Wall seconds of `command`, run in its own process group that is killed past `timeout_s`."""
    log = cwd / "output.log"
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            status = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RunnerError(f"timed out after {timeout_s:g} s") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    wall = time.perf_counter() - started
    if status != 0:
        tail = log.read_text("utf-8", errors="replace").strip().splitlines()[-5:]
        raise RunnerError(f"exited with status {status}: {' / '.join(tail)}")
    return wall


def run_bare(work: Workload, number: int) -> tuple[float, int]:
    return asyncio.run(bare_loop(work.url, work.attempts, work.concurrency)), 0


def run_bare_aiohttp(work: Workload, number: int) -> tuple[float, int]:
    loop = bare_loop(work.url, work.attempts, work.concurrency, transport="aiohttp")
    return asyncio.run(loop), 0


def run_ours(work: Workload, number: int) -> tuple[float, int]:
    harness = run_harness(work.project, f"bench-{number}")
    return harness.wall_s, harness.failed


def run_inspect(work: Workload, number: int) -> tuple[float, int]:
    folder = work.folder / f"inspect-{number}"
    folder.mkdir()
    shutil.copy(TEMPLATES / "inspect_task.py", folder / "soev_bench.py")
    with (folder / "samples.jsonl").open("w", encoding="utf-8") as samples:
        for text in work.inputs:
            samples.write(json.dumps({"input": text, "target": "artikel"}) + "\n")
    logs = folder / "logs"
    concurrency = str(work.concurrency)
    command = [str(INSPECT), "eval", "soev_bench.py", "-T", f"base_url={work.url}"]
    command += ["-T", f"concurrency={concurrency}"]
    command += ["--max-connections", concurrency, "--max-samples", concurrency]
    env = {**os.environ, "INSPECT_LOG_DIR": str(logs)}
    wall = timed(command, folder, env, work.timeout_s)
    [log] = logs.glob("*.eval")
    dump = [str(INSPECT), "log", "dump", "--header-only", str(log)]
    header = json.loads(subprocess.run(dump, capture_output=True, check=True).stdout)
    if header["status"] != "success":
        raise RunnerError(f"the eval ended with status {header['status']!r}")
    return wall, work.attempts - header["results"]["completed_samples"]


def run_promptfoo(work: Workload, number: int) -> tuple[float, int]:
    folder = work.folder / f"promptfoo-{number}"
    folder.mkdir()
    shutil.copy(TEMPLATES / "provider.mjs", folder / "provider.mjs")
    config = yaml.safe_load((TEMPLATES / "promptfooconfig.yaml").read_text("utf-8"))
    config["providers"][0]["config"]["baseUrl"] = work.url
    config["evaluateOptions"]["maxConcurrency"] = work.concurrency
    config["tests"] = [{"vars": {"question": text}} for text in work.inputs]
    dumped = yaml.safe_dump(config, allow_unicode=True, sort_keys=False)
    (folder / "promptfooconfig.yaml").write_text(dumped, encoding="utf-8")
    command = [str(PROMPTFOO), "eval", "-c", "promptfooconfig.yaml", "--no-cache"]
    command += ["-o", "results.json"]
    env = {
        **os.environ,
        **PROMPTFOO_ENV,
        "PROMPTFOO_CONFIG_DIR": str(work.folder / "promptfoo-home"),
    }
    wall = timed(command, folder, env, work.timeout_s)
    stats = json.loads((folder / "results.json").read_text("utf-8"))["results"]["stats"]
    ran = stats["successes"] + stats["failures"] + stats["errors"]
    if ran != work.attempts:
        raise RunnerError(f"ran {ran} of {work.attempts} tests")
    return wall, stats["errors"]


def runners() -> list[Runner]:
    """The bare loop and soev-evals, then each installed peer; a hint for the others."""
    ours = importlib.metadata.version("soev-pipeline")
    aiohttp_version = importlib.metadata.version("aiohttp")
    found = [
        Runner("bare httpx loop", f"httpx {httpx.__version__}", run_bare),
        Runner("bare loop, httpx over aiohttp", f"aiohttp {aiohttp_version}", run_bare_aiohttp),
        Runner("soev-evals run", f"soev-pipeline {ours}", run_ours),
    ]
    peers = [
        ("inspect eval", "inspect-ai", inspect_version(), INSPECT, run_inspect),
        ("promptfoo eval", "promptfoo", promptfoo_version(), PROMPTFOO, run_promptfoo),
    ]
    for name, package, version, executable, run in peers:
        if version is None or not executable.exists():
            hint = f"{package} is not installed: run `python bench/peers.py --setup`; skipped"
            print(hint, file=sys.stderr)
            continue
        found.append(Runner(name, f"{package} {version}", run))
    return found


def measure(
    latency_ms: float, concurrency: int, attempts: int, repeat: int, timeout_s: float
) -> list[Row]:
    """Run every runner `repeat` times, in turn, against one reference assistant."""
    selected = runners()
    rows = [Row(runner.name, runner.version) for runner in selected]
    process, url = start_assistant(latency_ms)
    try:
        with tempfile.TemporaryDirectory() as folder:
            work = prepare(Path(folder), url, concurrency, attempts, timeout_s)
            for number in range(repeat):
                for runner, row in zip(selected, rows, strict=True):
                    if row.error is not None:
                        continue
                    try:
                        wall, failed = runner.run(work, number)
                    except RunnerError as error:
                        row.error = str(error)
                        print(f"{runner.name}: {error}", file=sys.stderr)
                        continue
                    row.walls_s.append(wall)
                    row.failed += failed
                    print(f"run {number + 1}/{repeat}: {runner.name} {wall:.2f} s", file=sys.stderr)
    finally:
        process.terminate()
        process.wait()
    return rows


def table(rows: list[Row], title: str) -> str:
    bare = rows[0].wall_s
    lines = [
        title,
        "",
        "| runner | version | wall (s) | × bare httpx loop | failed attempts (all runs) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    notes = []
    for row in rows:
        if row.wall_s is None:
            notes.append(f"{row.runner}: {row.error}")
            continue
        ratio = f"{row.wall_s / bare:.2f}" if bare else "—"
        lines.append(
            f"| {row.runner} | {row.version} | {row.wall_s:.2f} | {ratio} | {row.failed} |"
        )
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setup", action="store_true", help="install the peers and stop")
    parser.add_argument("--scenario", choices=["slow", "fast"], default="slow")
    parser.add_argument("--latency-ms", type=float, help="overrides the scenario's")
    parser.add_argument("--concurrency", type=int, help="overrides the scenario's")
    parser.add_argument("--attempts", type=int, help="overrides the scenario's")
    parser.add_argument("--repeat", type=int, default=1, help="runs per runner (median)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per peer run")
    parser.add_argument("--json", action="store_true", help="print JSON, not a table")
    args = parser.parse_args()
    if args.setup:
        setup()
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    latency, concurrency, attempts = SCENARIOS[args.scenario]
    latency = args.latency_ms if args.latency_ms is not None else latency
    concurrency = args.concurrency or concurrency
    attempts = args.attempts or attempts
    rows = measure(latency, concurrency, attempts, args.repeat, args.timeout)
    ideal = latency / 1000 * attempts / concurrency
    if args.json:
        bare = rows[0].wall_s
        report = {
            "latency_ms": latency,
            "concurrency": concurrency,
            "attempts": attempts,
            "repeat": args.repeat,
            "ideal_s": ideal,
            "runners": [
                {
                    **asdict(row),
                    "wall_s": row.wall_s,
                    "ratio": row.wall_s / bare if row.wall_s and bare else None,
                }
                for row in rows
            ],
        }
        print(json.dumps(report, indent=2))
        return
    title = (
        f"{attempts} attempts, latency {latency:g} ms, concurrency {concurrency}"
        f" (median of {args.repeat}; ideal latency × attempts / concurrency {ideal:.2f} s)"
    )
    print(table(rows, title))


if __name__ == "__main__":
    main()
