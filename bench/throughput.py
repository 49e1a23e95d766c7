"""Is the harness ever the bottleneck between the user and their assistant?

Starts the bundled reference assistant with a fixed latency, then runs the same attempts
(a) through a bare httpx loop that does only the HTTP work of an attempt (open a thread,
read its stream to the end of the turn, delete it), (b) through the same loop on the
transport that the harness sends with (httpx over aiohttp, `soev_pipeline.core.transport`),
the stricter baseline, and (c) through `soev-evals run` on a generated project. Each side
is a whole process, timed from its start to its exit: the bare loops as
`python bench/throughput.py --bare ...`, the harness as the `soev-evals` command a user
types (start-up, attempts, grading, the report printed, the run recorded in Dagster). It
prints the wall times, the ratios, the physical limit (latency × attempts / concurrency:
no command can be faster) and the whole command against it, the command's start-up (to its
first request) and its tail (from its last attempt to its exit), the attempt phase against
the limit, the CPU seconds per attempt of the loops and of the harness, and the harness's
peak memory.

    python bench/throughput.py                     # the three scenarios below
    python bench/throughput.py --scenario fast     # one of them
    python bench/throughput.py --latency-ms 100 --concurrency 8 --attempts 200

Scenarios and targets on a 2-core machine:
- slow:   500 ms, concurrency 16, 400 attempts: attempt phase within 10% of the ideal
- fast:    50 ms, concurrency 32, 2,000 attempts: harness wall within 1.5× of the physical
          limit (3.1 s), its tail after the last attempt within 0.3 s
- memory:   0 ms, concurrency 32, 20,000 attempts: peak memory under 400 MB
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import yaml

SCENARIOS = {
    "slow": (500.0, 16, 400),
    "fast": (50.0, 32, 2000),
    "memory": (0.0, 32, 20000),
}
QUESTIONS = [
    "Binnen welke termijn moet ik bezwaar maken tegen een besluit?",
    "Wanneer is iemand aansprakelijk voor een onrechtmatige daad?",
    "Welke zorgplicht heeft een werkgever voor de veiligheid van werknemers?",
    "Wat zegt de Grondwet over gelijke behandeling?",
    "Wat is een besluit volgens de Algemene wet bestuursrecht?",
    "Mag ik mijn mening vrij uiten volgens de Grondwet?",
]


@dataclass
class Harness:
    wall_s: float
    startup_s: float
    tail_s: float
    attempt_phase_s: float
    cpu_s: float
    max_rss_mb: float
    failed: int
    turn_ms: float
    """The mean duration of a turn as the harness archived it (request to status event)."""


def start_assistant(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "soev_pipeline.reference",
            "--port",
            "0",
            "--latency-ms",
            str(latency_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://"):
        raise SystemExit(f"the reference assistant did not start: {url!r}")
    return process, url


@dataclass
class Loop:
    wall_s: float
    cpu_s: float


def timed_loop(url: str, attempts: int, concurrency: int, transport: str) -> Loop:
    """`bare_loop` in a process of its own (`--bare`), with its whole wall and CPU seconds."""
    command = [sys.executable, __file__, "--bare", url, str(attempts), str(concurrency), transport]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"the bare loop failed with status {status}")
    return Loop(wall, usage.ru_utime + usage.ru_stime)


async def bare_loop(url: str, attempts: int, concurrency: int, transport: str = "httpx") -> float:
    """The HTTP work of `attempts` one-turn attempts, and nothing else.

    `transport`: "httpx" for httpx's own, "aiohttp" for the harness's (httpx over aiohttp).
    """
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    sender = None
    if transport == "aiohttp":
        from soev_pipeline.core.transport import AiohttpTransport

        sender = AiohttpTransport(limits=limits)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=60, transport=sender
    ) as client:
        pending = iter(range(attempts))

        async def worker() -> None:
            for number in pending:
                body = {"input": {"text": QUESTIONS[number % len(QUESTIONS)]}, "agent": "bench"}
                headers = {"Accept": "text/event-stream"}
                async with client.stream(
                    "POST", "v1/chat/threads", json=body, headers=headers
                ) as response:
                    thread = response.headers["X-Soev-Thread-Id"]
                    event = ""
                    async for line in response.aiter_lines():
                        if line.startswith("event:"):
                            event = line[6:].strip()
                        elif event == "status" and line.startswith("data:"):
                            break
                await client.delete(f"v1/chat/threads/{thread}")

        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
        return time.perf_counter() - started


def write_project(directory: Path, url: str, attempts: int, concurrency: int) -> Path:
    suites = directory / "suites"
    suites.mkdir(parents=True)
    cases = [
        {"id": f"bench-{number:05d}", "input": f"{QUESTIONS[number % len(QUESTIONS)]} ({number})"}
        for number in range(attempts)
    ]
    suite = {
        "suite": "bench",
        "criteria": [
            {"kind": "run.no_failure", "gate": True},
            {"kind": "usage.max_tokens", "max": 5000},
        ],
        "cases": cases,
    }
    (suites / "bench.yaml").write_text(yaml.safe_dump(suite, allow_unicode=True), encoding="utf-8")
    project = {
        "name": "bench",
        "system": {"base_url": url, "agent": "bench", "concurrency": concurrency, "timeout_s": 60},
        "suites": [{"name": "bench", "files": "suites/*.yaml"}],
    }
    path = directory / "project.yaml"
    path.write_text(yaml.safe_dump(project), encoding="utf-8")
    return path


def prepare_instance(home: Path) -> None:
    """Create the project's Dagster instance and its databases, as a project's first run
    does once (`ensure_instance`): every timed run then finds them made, and none pays for
    making them (about a second, in its start-up, where the instance is opened ahead)."""
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    code = (
        "import sys; from pathlib import Path; "
        "from soev_pipeline.orchestration.instance import ensure_instance; "
        "ensure_instance(Path(sys.argv[1]))"
    )
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    subprocess.run([sys.executable, "-c", code, str(home)], env=env, check=True)


def prepare_suites(project: Path) -> None:
    """Parse the generated suite once into the project's suite cache, as a project's first
    command does: every timed run then reads it from there, and none pays for parsing
    thousands of cases in its start-up."""
    code = "import sys; from soev_pipeline.api import open_project; open_project(sys.argv[1])"
    subprocess.run([sys.executable, "-c", code, str(project)], check=True)


def run_harness(project: Path, run_id: str, code: Path | None = None) -> Harness:
    """`soev-evals run`, timed as a whole process; with `code`, a checkout of the package
    whose code it runs instead of this one's (through PYTHONPATH)."""
    env = {**os.environ, "DAGSTER_HOME": str(project.parent / "dagster-home")}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    command = [
        str(Path(sys.executable).with_name("soev-evals")),
        "run",
        "--project",
        str(project),
        "--run-id",
        run_id,
    ]
    started, since = time.perf_counter(), time.time()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"soev-evals run failed with status {status}")
    first, last, failed, turns = None, None, 0, []
    with (project.parent / "runs" / run_id / "evidence.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            evidence = json.loads(line)
            turns.extend(turn["duration_s"] for turn in evidence["turns"])
            begun = datetime.fromisoformat(evidence["started_at"])
            ended = datetime.fromisoformat(evidence["finished_at"])
            first = begun if first is None or begun < first else first
            last = ended if last is None or ended > last else last
            failed += any(turn["failure"] for turn in evidence["turns"])
    assert first is not None and last is not None
    return Harness(
        wall_s=wall,
        startup_s=first.timestamp() - since,
        tail_s=since + wall - last.timestamp(),
        attempt_phase_s=(last - first).total_seconds(),
        cpu_s=usage.ru_utime + usage.ru_stime,
        max_rss_mb=usage.ru_maxrss / 1024,
        failed=failed,
        turn_ms=1000 * sum(turns) / max(1, len(turns)),
    )


def scenario(
    name: str,
    latency_ms: float,
    concurrency: int,
    attempts: int,
    bare: bool,
    repeat: int,
    baseline: Path | None = None,
) -> None:
    """Run the bare loop and the harness `repeat` times each and print the medians; with
    `baseline`, that checkout's harness too, alternating with this one."""
    process, url = start_assistant(latency_ms)
    loops: dict[str, list[Loop]] = {"httpx": [], "aiohttp": []}
    runs: list[Harness] = []
    before: list[Harness] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = write_project(Path(folder), url, attempts, concurrency)
            prepare_instance(project.parent / "dagster-home")
            prepare_suites(project)
            for number in range(repeat):
                if bare:
                    for transport, measured in loops.items():
                        measured.append(timed_loop(url, attempts, concurrency, transport))
                runs.append(run_harness(project, f"bench-{number}"))
                if baseline is not None:
                    before.append(run_harness(project, f"baseline-{number}", baseline))
    finally:
        process.terminate()
        process.wait()
    harness = sorted(runs, key=lambda run: run.wall_s)[len(runs) // 2]
    bare = {
        transport: sorted(measured, key=lambda loop: loop.wall_s)[len(measured) // 2]
        for transport, measured in loops.items()
        if measured
    }
    bare_s = bare["httpx"].wall_s if "httpx" in bare else None
    ideal = latency_ms / 1000 * attempts / concurrency
    print(
        f"\n{name}: {attempts} attempts, latency {latency_ms:g} ms, concurrency {concurrency}"
        f" (median of {repeat})"
    )

    def line(label: str, value: str, note: str = "") -> None:
        print(f"  {label:<28}{value:>9}  {note}".rstrip())

    def rate(seconds: float) -> str:
        return f"({attempts / seconds:,.0f} attempts/s)"

    names = {"httpx": "bare httpx loop", "aiohttp": "bare loop, aiohttp"}
    for transport, loop in bare.items():
        line(f"{names[transport]} wall", f"{loop.wall_s:.2f} s", rate(loop.wall_s))
        line("  its CPU per attempt", f"{1000 * loop.cpu_s / attempts:.2f} ms")
    line("soev-evals run wall", f"{harness.wall_s:.2f} s", "(start-up, attempts, grading, report)")
    if ideal > 0:
        line("physical limit", f"{ideal:.2f} s", "(latency × attempts / concurrency)")
        line("ratio run / physical limit", f"{harness.wall_s / ideal:.2f}")
    line("  start-up to first request", f"{harness.startup_s:.2f} s")
    line("  last attempt to exit", f"{harness.tail_s:.2f} s", "(grading left, report, record)")
    if bare_s is not None:
        line("ratio run / bare httpx", f"{harness.wall_s / bare_s:.2f}")
    if "aiohttp" in bare:
        line("ratio run / bare aiohttp", f"{harness.wall_s / bare['aiohttp'].wall_s:.2f}")
    line("attempt phase", f"{harness.attempt_phase_s:.2f} s", rate(harness.attempt_phase_s))
    if bare_s is not None:
        line("ratio attempt phase / bare", f"{harness.attempt_phase_s / bare_s:.2f}")
    if ideal > 0:
        over = 100 * (harness.attempt_phase_s / ideal - 1)
        line("attempt phase / limit", f"{harness.attempt_phase_s / ideal:.2f}", f"({over:+.1f}%)")
    line("harness CPU per attempt", f"{1000 * harness.cpu_s / attempts:.2f} ms")
    line("mean turn, as archived", f"{harness.turn_ms:.1f} ms", f"(the latency: {latency_ms:g} ms)")
    line("harness peak memory", f"{harness.max_rss_mb:.1f} MB")
    line("failed attempts", str(harness.failed))
    if before:
        old = sorted(before, key=lambda run: run.wall_s)[len(before) // 2]
        print(f"  baseline {baseline} (alternating with the runs above):")
        line(
            "  its wall", f"{old.wall_s:.2f} s", f"(this code: {harness.wall_s / old.wall_s:.2f}×)"
        )
        if ideal > 0:
            line("  its ratio to the limit", f"{old.wall_s / ideal:.2f}")
        line("  its start-up, tail", f"{old.startup_s:.2f} s", f"{old.tail_s:.2f} s")
        line(
            "  its CPU per attempt",
            f"{1000 * old.cpu_s / attempts:.2f} ms",
            f"(this code: {harness.cpu_s / old.cpu_s:.2f}×)",
        )
        line("  its peak memory", f"{old.max_rss_mb:.1f} MB")


def main() -> None:
    if sys.argv[1:2] == ["--bare"]:  # one side of the comparison, in a process of its own
        url, attempts, concurrency, transport = sys.argv[2:6]
        asyncio.run(bare_loop(url, int(attempts), int(concurrency), transport))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--latency-ms", type=float)
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--attempts", type=int)
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (median)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also time the harness of another checkout of the repository (its PYTHONPATH), "
        "alternating with this one: `git worktree add /tmp/base HEAD~1`",
    )
    args = parser.parse_args()
    if args.latency_ms is not None or args.concurrency or args.attempts:
        latency, concurrency, attempts = SCENARIOS["fast"]
        scenario(
            "custom",
            args.latency_ms if args.latency_ms is not None else latency,
            args.concurrency or concurrency,
            args.attempts or attempts,
            bare=True,
            repeat=args.repeat,
            baseline=args.baseline,
        )
        return
    for name in SCENARIOS if args.scenario == "all" else [args.scenario]:
        latency, concurrency, attempts = SCENARIOS[name]
        repeat = 1 if name == "memory" else args.repeat
        scenario(
            name,
            latency,
            concurrency,
            attempts,
            bare=name != "memory",
            repeat=repeat,
            baseline=args.baseline,
        )


if __name__ == "__main__":
    main()
