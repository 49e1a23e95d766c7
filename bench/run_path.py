"""Which way should `soev-evals run` join Dagster: execute the `evaluate` job, or run the
steps and report them? (docs/architecture.md records the answer and these figures.)

Both ways run the same steps (`soev_pipeline.run.service`) against the bundled reference
assistant, as whole processes timed from start to exit, beside a bare httpx loop that is a
whole process too (`throughput.py --bare`):

- report: `soev-evals run` as it is: the steps in one coroutine, Dagster imported on a
  thread while the attempts wait on the assistant, the run reported to the instance after.
- execute: what a CLI that executes the job would do: load the project, build its
  definitions, open the instance, add the partition and `execute_in_process` the
  `evaluate` job, then print the report (`--execute PROJECT RUN_ID`).

    python bench/run_path.py                 # slow (500 ms, c16, 400) and fast (50 ms, c32, 2,000)
    python bench/run_path.py --repeat 5 --scenario slow
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import (  # the sibling script, found through sys.path above
    SCENARIOS,
    prepare_instance,
    start_assistant,
    timed_loop,
    write_project,
)


def execute(project_file: str, run_id: str) -> None:
    """The other way: execute the `evaluate` job in this process, then print the report."""
    from soev_pipeline.cli.render import render_report
    from soev_pipeline.orchestration.definitions import definitions_for
    from soev_pipeline.orchestration.instance import project_instance
    from soev_pipeline.orchestration.keys import add_run
    from soev_pipeline.project import ProjectPaths
    from soev_pipeline.run.archive import RunArchive
    from soev_pipeline.run.report import read_report

    paths = ProjectPaths.of(project_file)
    defs = definitions_for(project_file)
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with project_instance(paths) as instance:
        add_run(instance, run_id)
        job = defs.resolve_job_def("evaluate")
        result = job.execute_in_process(instance=instance, partition_key=run_id, run_config=quiet)
        assert result.success
    sys.stdout.write(render_report(read_report(RunArchive(paths.runs, run_id))))
    sys.stdout.flush()
    os._exit(0)


def timed(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def scenario(name: str, repeat: int) -> None:
    latency, concurrency, attempts = SCENARIOS[name]
    process, url = start_assistant(latency)
    walls: dict[str, list[float]] = {"bare httpx loop": [], "report (as built)": [], "execute": []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = write_project(Path(folder), url, attempts, concurrency)
            prepare_instance(project.parent / "dagster-home")
            env = {**os.environ, "DAGSTER_HOME": str(project.parent / "dagster-home")}
            soev = str(Path(sys.executable).with_name("soev-evals"))
            for number in range(repeat):  # the three alternate, so load falls on all of them
                walls["bare httpx loop"].append(
                    timed_loop(url, attempts, concurrency, "httpx").wall_s
                )
                run = [soev, "run", "--project", str(project), "--run-id", f"r{number}"]
                walls["report (as built)"].append(timed(run, env))
                other = [sys.executable, __file__, "--execute", str(project), f"x{number}"]
                walls["execute"].append(timed(other, env))
    finally:
        process.terminate()
        process.wait()
    bare = statistics.median(walls["bare httpx loop"])
    print(f"\n{name}: {attempts} attempts, latency {latency:g} ms, concurrency {concurrency}")
    print(f"  median of {repeat}, whole processes        wall   ratio   (min-max)")
    for label, values in walls.items():
        middle = statistics.median(values)
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"  {label:<38}{middle:6.2f} s {middle / bare:6.2f}   ({spread})")


def main() -> None:
    if sys.argv[1:2] == ["--execute"]:
        execute(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=["slow", "fast", "all"], default="all")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name in ("slow", "fast") if args.scenario == "all" else (args.scenario,):
        scenario(name, args.repeat)


if __name__ == "__main__":
    main()
