"""Benchmark: the analysis frames on one large run, and on thirty runs of the demo.

1. Makes (from a seed, as bench/grade.py does) a project with one run of `--attempts`
   attempts over `--cases` cases, every case in the dev split, graded offline with the
   first 15 built-in kinds that need no judge: 20,000 attempts give 300,000 verdicts. Then,
   in a fresh process each time, times `verdicts_frame` of the run and measures the peak
   resident memory of that process, and the memory after the imports alone (pandas and
   pyarrow). Also `attempts_frame`, which reads the evidence too.
2. Runs the demo project once against the reference assistant (offline, on 127.0.0.1),
   copies its run 29 times under other ids and days, and times, in a fresh process, the
   five frames of all 30 runs together, after the imports.

Prints the median of `--repeat` measurements. The goals (docs/analysis.md#how-fast):
`verdicts_frame` of the 300,000 verdicts in 3 s or less and at most 500 MB at its peak;
the frames of 30 demo runs in 2 s or less.

    python bench/analysis.py                       # 20,000 attempts, 15 criteria, 3 repeats
    python bench/analysis.py --attempts 2000 --repeat 1   # a quick look
    python bench/analysis.py --keep /tmp/analysis          # make the projects once, then reuse
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
RUN_ID = "bench"
CRITERIA = 15
GOALS = {"verdicts_s": 3.0, "verdicts_peak_mb": 500.0, "demo_30_s": 2.0}


def make_large(folder: Path, *, attempts: int, cases: int, seed: int) -> None:
    """The project with one graded run; every case is a dev case, so every verdict is a row."""
    import synthetic
    from grade import _criteria, rescore

    made = synthetic.make_cases

    def dev_only(*args: Any, **kwargs: Any) -> list[Any]:
        return [case.model_copy(update={"split": "dev"}) for case in made(*args, **kwargs)]

    synthetic.make_cases = dev_only  # type: ignore[assignment]
    synthetic.write_project_with_run(
        folder,
        seed=seed,
        units=2000,
        cases=cases,
        attempts=attempts,
        criteria=_criteria()[:CRITERIA],
        run_id=RUN_ID,
    )
    rescore(folder)


def make_demo_runs(folder: Path, count: int) -> Path:
    """A copy of the demo project with `count` runs: one real run, copied under other ids."""
    from soev_pipeline import evaluate
    from soev_pipeline.reference import ReferenceServer

    project = folder / "demo"
    shutil.copytree(DEMO, project, ignore=shutil.ignore_patterns("runs", ".soev", "*.html"))
    runs = project / "runs"
    with ReferenceServer() as server:
        os.environ["SOEV_DEMO_URL"] = server.url
        evaluate(project / "project.yaml", k=2, run_id="night-00")
    first = runs / "night-00"
    manifest = json.loads((first / "manifest.json").read_text(encoding="utf-8"))
    start = datetime.fromisoformat(manifest["created_at"])
    for night in range(1, count):
        run_id = f"night-{night:02d}"
        shutil.copytree(first, runs / run_id, ignore=shutil.ignore_patterns("lock"))
        copied = {
            **manifest,
            "run_id": run_id,
            "created_at": (start + timedelta(days=night)).isoformat(),
        }
        (runs / run_id / "manifest.json").write_text(json.dumps(copied), encoding="utf-8")
    return project / "project.yaml"


def _peak_mb() -> float:
    """The peak resident memory of this process so far (`VmHWM`: unlike `ru_maxrss`, which
    Linux keeps across exec, it starts anew with the program, not with its parent's peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(kind: str, project: Path) -> dict[str, Any]:
    """In this process: import, then build the frames of `kind`; their time and memory.

    The imports (pandas, pyarrow, the package) happen once in a notebook's life: they are
    measured apart."""
    began = time.perf_counter()
    from soev_pipeline import analysis
    from soev_pipeline.analysis import frames  # noqa: F401

    imported_s = time.perf_counter() - began
    imported_mb = _peak_mb()
    began, cpu = time.perf_counter(), time.process_time()
    if kind == "verdicts":
        rows = len(analysis.verdicts_frame(project))
    elif kind == "attempts":
        rows = len(analysis.attempts_frame(project))
    else:
        rows = sum(
            len(frame(project))
            for frame in (
                analysis.runs_frame,
                analysis.cases_frame,
                analysis.attempts_frame,
                analysis.verdicts_frame,
                analysis.labels_frame,
            )
        )
    seconds = time.perf_counter() - began
    return {
        "seconds": seconds,
        "cpu_s": time.process_time() - cpu,
        "peak_mb": _peak_mb(),
        "imported_s": imported_s,
        "imported_mb": imported_mb,
        "rows": rows,
    }


def _fresh(kind: str, project: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(project)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _median(results: list[dict[str, Any]], key: str) -> float:
    return statistics.median(result[key] for result in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=20_000)
    parser.add_argument("--cases", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=30, help="demo runs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="make the projects in DIR, or reuse them there"
    )
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    with tempfile.TemporaryDirectory(prefix="soev-bench-analysis-") as temporary:
        folder = args.keep or Path(temporary)
        large = folder / "large" / "project.yaml"
        if not large.exists():
            print(f"making a run of {args.attempts} attempts, {CRITERIA} criteria", flush=True)
            make_large(large.parent, attempts=args.attempts, cases=args.cases, seed=args.seed)
        demo = folder / "demo" / "project.yaml"
        if not demo.exists():
            print(f"making {args.runs} runs of the demo ...", flush=True)
            make_demo_runs(folder, args.runs)
        figures: dict[str, list[dict[str, Any]]] = {"verdicts": [], "attempts": [], "demo": []}
        for _ in range(args.repeat):
            figures["verdicts"].append(_fresh("verdicts", large))
            figures["attempts"].append(_fresh("attempts", large))
            figures["demo"].append(_fresh("demo", demo))
    verdicts, attempts, runs = figures["verdicts"], figures["attempts"], figures["demo"]
    shown = {
        "verdicts_s": _median(verdicts, "seconds"),
        "verdicts_peak_mb": _median(verdicts, "peak_mb"),
        "demo_30_s": _median(runs, "seconds"),
    }
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"\nmedians of {args.repeat} fresh processes; {os.cpu_count()} cpus, load {load}")
    print(f"{'':44} {'figure':>10} {'goal':>8}")
    rows = [
        (f"verdicts_frame, {verdicts[0]['rows']:,} rows (s)", shown["verdicts_s"], "verdicts_s"),
        ("  its CPU time, every thread (s)", _median(verdicts, "cpu_s"), None),
        ("  its process's peak RSS (MB)", shown["verdicts_peak_mb"], "verdicts_peak_mb"),
        ("  of which the imports (MB)", _median(verdicts, "imported_mb"), None),
        ("the imports, once per process (s)", _median(verdicts, "imported_s"), None),
        (f"attempts_frame, {attempts[0]['rows']:,} rows (s)", _median(attempts, "seconds"), None),
        ("  its process's peak RSS (MB)", _median(attempts, "peak_mb"), None),
        (f"the 5 frames of {args.runs} demo runs (s)", shown["demo_30_s"], "demo_30_s"),
        ("  their CPU time (s)", _median(runs, "cpu_s"), None),
        (f"  rows in all ({runs[0]['rows']:,}); peak RSS (MB)", _median(runs, "peak_mb"), None),
    ]
    for label, value, goal in rows:
        target = f"{GOALS[goal]:g}" if goal else ""
        met = "" if goal is None else ("  ok" if value <= GOALS[goal] else "  MISSED")
        print(f"{label:44} {value:10.2f} {target:>8}{met}")


if __name__ == "__main__":
    main()
