"""Is the object-store archive fast enough to be the default in a cluster?

Runs the same work side by side on a local runs folder and on `s3://` against moto's S3
server, started as a process of its own on 127.0.0.1 (`moto_server`), and prints the ratios:

- a run: 50 ms a turn, concurrency 32, 2,000 attempts (`bench/throughput.py`'s `fast`
  scenario), the whole `soev-evals run` process: goal at most 1.5× local;
- a rescore of 20,000 attempts (`bench/grade.py`'s generated project), the whole
  `soev-evals rescore --offline` process: goal at most 1.5× local;
- the viewer's run page and case page (`bench/view.py`'s app on an ASGI transport), first
  and then warm, each a median over `--repeat` fresh viewers (on s3 with nothing
  downloaded yet but an S3 client made): goal at most 2× local. Warm pages are timed once
  the downloads that the first run page starts in the background (the verdicts and the
  evidence, for the case pages) are done; the run page asked again at once, while they
  run, is printed too.

    python bench/object_store.py                 # all three, median of 3
    python bench/object_store.py --only view --repeat 5
    python bench/object_store.py --attempts 400 --rescore-attempts 2000   # a quick look

The run and the rescore are whole `soev-evals` processes, the two sides alternately and
the first of each pair alternating too (local, s3, s3, local, ...). Each prints the median
wall time, whose ratio is the goal's figure, and the median CPU time of the command and its
worker processes (on s3 with what moto's server spent), which a busy machine disturbs far
less: when the walls of one side scatter, as they do on a shared machine, the CPU ratio
says whether the two sides did the same work. The load average is printed beside them.

moto is a Python server, slower than S3 or MinIO per request; the figures are an upper
bound of what the object store costs on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

BUCKET = "bench"
ENV = {
    "AWS_ACCESS_KEY_ID": "bench-key-id",
    "AWS_SECRET_ACCESS_KEY": "bench-secret-key",
    "AWS_REGION": "us-east-1",
}
RUN_ID = "bench"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """moto's S3 server as a process of its own, with the bench bucket; its environment."""
    import boto3

    port = _free_port()
    server = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {**ENV, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("moto_server did not start") from None
            time.sleep(0.1)
    boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    ).create_bucket(Bucket=BUCKET)
    return process, env


def _timed_process(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The wall time and the CPU time (user and system, with its worker processes) of one
    command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return took, cpu


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _line(label: str, local: float, remote: float, goal: float | None, unit: str = "s") -> None:
    ratio = remote / local
    verdict = "" if goal is None else f"  (goal ≤ {goal:g}×: {'ok' if ratio <= goal else 'over'})"
    print(f"  {label:<34}{local:>8.3f} {unit} {remote:>8.3f} {unit} {ratio:>6.2f}×{verdict}")


def _sides(
    local: Callable[[], tuple[float, float]], remote: Callable[[], tuple[float, float]], repeat: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Each side `repeat` times, alternately, the first side alternating too (local, s3,
    s3, local, ...): a machine that gets busier or quieter during the sitting, or a cache
    the first of a pair warms for the second, weighs on both sides alike."""
    locals_: list[tuple[float, float]] = []
    remotes: list[tuple[float, float]] = []
    for number in range(repeat):
        if number % 2 == 0:
            locals_.append(local())
            remotes.append(remote())
        else:
            remotes.append(remote())
            locals_.append(local())
    return locals_, remotes


def _report(
    label: str, locals_: list[tuple[float, float]], remotes: list[tuple[float, float]]
) -> None:
    """The medians of wall time (the goal's figure) and of CPU time (the work done, which a
    busy machine disturbs far less), with the load average now."""
    print(f"  {'':<34}{'local':>10} {'s3 (moto)':>10} {'ratio':>7}")
    _line(
        f"{label}, wall",
        statistics.median(w for w, _ in locals_),
        statistics.median(w for w, _ in remotes),
        1.5,
    )
    _line(
        f"{label}, CPU",
        statistics.median(c for _, c in locals_),
        statistics.median(c for _, c in remotes),
        None,
    )
    print(f"  (load average {_load()}; walls local {_figures(locals_)}, s3 {_figures(remotes)})")


def _figures(sides: list[tuple[float, float]]) -> str:
    return " ".join(f"{wall:.1f}" for wall, _ in sides)


def _cpu_s(pid: int) -> float:
    """The CPU seconds process `pid` has used so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_run(env: dict[str, str], attempts: int, repeat: int, moto: int) -> None:
    """`soev-evals run` of the fast scenario, alternating local and object store. The s3
    side's CPU includes what moto's server spent on the run (on the same cores)."""
    from throughput import prepare_instance, start_assistant, write_project

    assistant, url = start_assistant(50.0)
    print(f"\nrun: {attempts} attempts, 50 ms a turn, concurrency 32 (median of {repeat})")
    print(f"  (load average {_load()} at the start)")
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = write_project(Path(folder), url, attempts, 32)
            home = project.parent / "dagster-home"
            prepare_instance(home)
            soev = str(Path(sys.executable).with_name("soev-evals"))
            base = {**os.environ, **env, "DAGSTER_HOME": str(home)}
            command = [soev, "run", "--project", str(project)]
            numbers = iter(range(2 * repeat))

            def local() -> tuple[float, float]:
                return _timed_process([*command, "--run-id", f"r{next(numbers)}"], base)

            def remote() -> tuple[float, float]:
                runs = f"s3://{BUCKET}/run-{next(numbers)}"
                before = _cpu_s(moto)
                wall, cpu = _timed_process([*command, "--runs-dir", runs], base)
                return wall, cpu + _cpu_s(moto) - before

            locals_, remotes = _sides(local, remote, repeat)
    finally:
        assistant.terminate()
        assistant.wait()
    _report("run, whole process", locals_, remotes)


def _upload(folder: Path, url: str) -> None:
    """Archive the generated run of `folder` at `url`, as `soev-evals run` would: manifest,
    batches of attempts, then the compaction."""
    from soev_pipeline.run import RunArchive

    local = RunArchive(folder / "runs", RUN_ID)
    remote = RunArchive(url, RUN_ID)
    remote.create(local.manifest())
    with remote.locked("run"), remote.evidence_writer() as writer:
        for evidence in local.iter_evidence():
            writer.append(evidence)


def bench_rescore(env: dict[str, str], attempts: int, repeat: int) -> None:
    """`soev-evals rescore --offline` of a generated run of `attempts` attempts."""
    from grade import make

    os.environ.update(env)
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "project"
        make(folder, 2000, attempts, 7)
        url = f"s3://{BUCKET}/rescore"
        began = time.perf_counter()
        _upload(folder, url)
        uploaded = time.perf_counter() - began
        soev = str(Path(sys.executable).with_name("soev-evals"))
        base = {**os.environ, **env, "DAGSTER_HOME": str(Path(root) / "dagster-home")}
        command = [soev, "rescore", RUN_ID, "--offline", "--project", str(folder / "project.yaml")]
        print(f"\nrescore: {attempts} attempts, offline (median of {repeat})")
        print(f"  (archiving them on s3 took {uploaded:.1f} s; load average {_load()})")
        locals_, remotes = _sides(
            lambda: _timed_process(command, base),
            lambda: _timed_process([*command, "--runs-dir", url], base),
            repeat,
        )
        _report("rescore, whole process", locals_, remotes)
        last = f"{RUN_ID}/scorings/{repeat:04d}/verdicts.jsonl"
        from soev_pipeline.run.store import ObjectStore

        found = ObjectStore(url).bucket.get(last)
        same = found is not None and found[0] == (folder / "runs" / last).read_bytes()
        print(f"  (the last scorings' verdicts are {'the same' if same else 'NOT the same'})")


AT_ONCE = "run page, again at once"
"""The run page asked again right after the first, while the downloads it started run."""


def _settle() -> None:
    """Wait for the viewer's background downloads (`RunIndex.prefetch`) to end."""
    for thread in threading.enumerate():
        if thread.name == "soev-view-prefetch":
            thread.join()


def _pages(runs: Any, folder: Path, repeat: int) -> dict[str, float]:
    """The run page and a case page of a fresh viewer: first, then the median of `repeat`."""
    import httpx

    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive
    from soev_pipeline.view import create_app

    loaded = load(folder / "project.yaml")
    graded = {e.case_id for e in RunArchive(folder / "runs", RUN_ID).iter_evidence()}
    case_id = next(case.id for case in loaded.cases() if case.split == "dev" and case.id in graded)
    app = create_app(loaded, runs)
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")

    def timed(path: str) -> float:
        async def get() -> float:
            began = time.perf_counter()
            response = await client.get(path)
            took = time.perf_counter() - began
            if response.status_code != 200:
                raise SystemExit(f"{path}: {response.status_code} {response.text[:300]}")
            return took

        return loop.run_until_complete(get())

    figures = {}
    for name, path in (
        ("run page", f"/runs/{RUN_ID}"),
        ("case page", f"/runs/{RUN_ID}/cases/{case_id}"),
    ):
        figures[f"{name}, first"] = timed(path)
        if name == "run page":
            figures[f"{AT_ONCE}"] = timed(path)
            _settle()
        figures[f"{name}, warm"] = statistics.median(timed(path) for _ in range(repeat))
    loop.run_until_complete(client.aclose())
    loop.close()
    return figures


def bench_view(env: dict[str, str], attempts: int, repeat: int) -> None:
    """The viewer's pages of a graded run of `attempts` attempts, local and on s3.

    The pages are made under the garbage collector's thresholds of a `soev-evals view`
    process (`cli.main.COLLECTOR_THRESHOLDS`), and each fresh viewer starts with the
    garbage of the ones before it collected, as a new process has none: else a full
    collection of this process's heap lands on a page of either side now and then.
    """
    from grade import make

    from soev_pipeline.cli.main import COLLECTOR_THRESHOLDS

    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "project"
        make(folder, 2000, attempts, 11)
        url = f"s3://{BUCKET}/view"
        _upload(folder, url)
        soev = str(Path(sys.executable).with_name("soev-evals"))
        base = {**os.environ, **env, "DAGSTER_HOME": str(Path(root) / "dagster-home")}
        project = ["--project", str(folder / "project.yaml")]
        for runs in ([], ["--runs-dir", url]):
            _timed_process([soev, "rescore", RUN_ID, "--offline", *project, *runs], base)
        _pages(folder / "runs", folder, 1)  # the process's first page imports and warms up
        locals_: list[dict[str, float]] = []
        remotes: list[dict[str, float]] = []
        for _ in range(repeat):
            gc.collect()
            locals_.append(_pages(folder / "runs", folder, repeat))
            fresh = _fresh(url)
            gc.collect()
            remotes.append(_pages(fresh, folder, repeat))
    print(f"\nviewer: a run of {attempts} attempts (median of {repeat} fresh viewers)")
    print(f"  {'':<34}{'local':>10} {'s3 (moto)':>10} {'ratio':>7}")
    for name in locals_[0]:
        _line(
            name,
            statistics.median(one[name] for one in locals_),
            statistics.median(one[name] for one in remotes),
            None if name == AT_ONCE else 2.0,
        )
    print(f"  (load average {_load()})")


def _fresh(url: str) -> str:
    """`url` with nothing of it kept by this process but a made S3 client (made once per
    process, as the imports are): the next viewer downloads what it shows."""
    from soev_pipeline.run.store import _OPEN, open_store

    _OPEN.pop(url, None)
    open_store(url).bucket.client  # noqa: B018 - made here, outside the timed pages
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("run", "rescore", "view"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--attempts", type=int, default=2000, help="of the run")
    parser.add_argument("--rescore-attempts", type=int, default=20000)
    parser.add_argument("--view-attempts", type=int, default=2000)
    args = parser.parse_args()
    moto, env = start_moto()
    try:
        if args.only in (None, "run"):
            bench_run(env, args.attempts, args.repeat, moto.pid)
        if args.only in (None, "rescore"):
            bench_rescore(env, args.rescore_attempts, args.repeat)
        if args.only in (None, "view"):
            bench_view(env, args.view_attempts, args.repeat)
    finally:
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    main()
