"""Is the object-store archive fast enough to be the default in a cluster?

Runs the same work side by side on a local runs folder and on `s3://` against moto's S3
server, started as a process of its own on 127.0.0.1 (`moto_server`), and prints the ratios:

- a run: 50 ms a turn, concurrency 32, 2,000 attempts (`bench/throughput.py`'s `fast`
  scenario), the whole `soev-evals run` process: goal at most 1.5× local;
- a rescore of 20,000 attempts (`bench/grade.py`'s generated project), the whole
  `soev-evals rescore --offline` process: goal at most 1.5× local;
- the viewer's run page and case page (`bench/view.py`'s app on an ASGI transport), first
  and then warm, each a median over `--repeat` fresh viewers (on s3 with nothing
  downloaded yet but an S3 client made): goal at most 2× local.

    python bench/object_store.py                 # all three, median of 3
    python bench/object_store.py --only view --repeat 5
    python bench/object_store.py --attempts 400 --rescore-attempts 2000   # a quick look

moto is a Python server, slower than S3 or MinIO per request; the figures are an upper
bound of what the object store costs on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
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


def _timed_process(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    return took


def _line(label: str, local: float, remote: float, goal: float) -> None:
    ratio = remote / local
    verdict = "ok" if ratio <= goal else "over the goal"
    print(
        f"  {label:<34}{local:>8.3f} s {remote:>8.3f} s {ratio:>6.2f}×  "
        f"(goal ≤ {goal:g}×: {verdict})"
    )


def _cpu_s(pid: int) -> float:
    """The CPU seconds process `pid` has used so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_run(env: dict[str, str], attempts: int, repeat: int, moto: int) -> None:
    """`soev-evals run` of the fast scenario, alternating local and object store."""
    from throughput import prepare_instance, start_assistant, write_project

    assistant, url = start_assistant(50.0)
    local: list[float] = []
    remote: list[float] = []
    served: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = write_project(Path(folder), url, attempts, 32)
            home = project.parent / "dagster-home"
            prepare_instance(home)
            soev = str(Path(sys.executable).with_name("soev-evals"))
            base = {**os.environ, **env, "DAGSTER_HOME": str(home)}
            for number in range(repeat):
                command = [soev, "run", "--project", str(project), "--run-id", f"r{number}"]
                local.append(_timed_process(command, base))
                runs = f"s3://{BUCKET}/run-{number}"
                before = _cpu_s(moto)
                remote.append(_timed_process([*command, "--runs-dir", runs], base))
                served.append(_cpu_s(moto) - before)
    finally:
        assistant.terminate()
        assistant.wait()
    print(f"\nrun: {attempts} attempts, 50 ms a turn, concurrency 32 (median of {repeat})")
    print(f"  {'':<34}{'local':>10} {'s3 (moto)':>10} {'ratio':>7}")
    _line("soev-evals run, whole process", statistics.median(local), statistics.median(remote), 1.5)
    print(
        f"  (moto's server used {statistics.median(served):.1f} s of CPU a run, on the same cores)"
    )


def _upload(folder: Path, url: str) -> None:
    """Archive the generated run of `folder` at `url`, as `soev-evals run` would: manifest,
    one object per attempt, then the compaction."""
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
        local: list[float] = []
        remote: list[float] = []
        for _ in range(repeat):
            local.append(_timed_process(command, base))
            remote.append(_timed_process([*command, "--runs-dir", url], base))
    print(f"\nrescore: {attempts} attempts, offline (median of {repeat})")
    print(f"  (archiving them on s3 took {uploaded:.1f} s: {attempts} uploads and a compaction)")
    print(f"  {'':<34}{'local':>10} {'s3 (moto)':>10} {'ratio':>7}")
    _line(
        "soev-evals rescore, whole process",
        statistics.median(local),
        statistics.median(remote),
        1.5,
    )


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
        figures[f"{name}, warm"] = statistics.median(timed(path) for _ in range(repeat))
    loop.run_until_complete(client.aclose())
    loop.close()
    return figures


def bench_view(env: dict[str, str], attempts: int, repeat: int) -> None:
    """The viewer's pages of a graded run of `attempts` attempts, local and on s3."""
    from grade import make

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
            locals_.append(_pages(folder / "runs", folder, repeat))
            remotes.append(_pages(_fresh(url), folder, repeat))
    print(f"\nviewer: a run of {attempts} attempts (median of {repeat} fresh viewers)")
    print(f"  {'':<34}{'local':>10} {'s3 (moto)':>10} {'ratio':>7}")
    for name in locals_[0]:
        _line(
            name,
            statistics.median(one[name] for one in locals_),
            statistics.median(one[name] for one in remotes),
            2.0,
        )


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
