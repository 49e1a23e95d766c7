"""Benchmark: load a project with one big suite, without the suite cache, cold and warm.

Writes a project whose suite holds `--cases` synthetic cases (see `synthetic.py`) over
`--files` suite files, each with the test cases of its part in a file of its own beside it
(a quarter of the cases; a file that holds a test case is never cached, so the warm load
parses these), each case with three criteria (one shared by its file), and times
`load` three ways, each `--repeats` times, printing the median wall and CPU seconds:

- uncached: `load(path)`, which parses and validates every file;
- cold: `load(path, suite_cache=...)` on an empty cache, which also writes the entries;
- warm: `load(path, suite_cache=...)` again, which reads the entries and parses no YAML.

CPU seconds are those of this process: on a busy machine they vary less than wall time.

    python bench/load.py                       # 20,000 cases in 20 files
    python bench/load.py --cases 2000 --files 2 --repeats 1
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from synthetic import MESSAGES, make_cases, make_corpus

from soev_pipeline.project import ProjectPaths, load


def write_project(directory: Path, cases: int, files: int, seed: int) -> Path:
    """A project of one suite `bench` of `cases` cases over `files` files."""
    corpus = make_corpus(seed, 2000)
    made = make_cases(random.Random(seed + 2), corpus, cases)
    per_file = -(-cases // files)
    for number in range(files):
        chunk = made[number * per_file : (number + 1) * per_file]
        for split, suffix in (("dev", ""), ("test", "-test")):
            document = {
                "suite": "bench",
                "criteria": [{"kind": "run.no_failure", "gate": True}],
                "cases": [
                    {
                        **case.model_dump(mode="json", exclude={"suite", "criteria"}),
                        "criteria": [
                            {"kind": "citations.required", "min": 0.5, "gate": True},
                            {"kind": "reply.max_length", "max": 2500},
                        ],
                    }
                    for case in chunk
                    if case.split == split
                ],
            }
            # the test cases in a file of their own: a file that holds one is never cached
            file = directory / "suites" / f"bench-{number:03d}{suffix}.yaml"
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(yaml.safe_dump(document, allow_unicode=True, sort_keys=False))
    project = {
        "name": "bench",
        "system": {"base_url": "http://127.0.0.1:9/"},
        "suites": [{"name": "bench", "files": "suites/*.yaml"}],
        "messages": MESSAGES,
    }
    path = directory / "project.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    return path


def timed(
    action: Callable[[], Any], before: Callable[[], Any], repeats: int
) -> tuple[float, float]:
    """The median wall and CPU seconds of `action`, each run after `before`."""
    walls, cpus = [], []
    for _ in range(repeats):
        before()
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = write_project(Path(folder), args.cases, args.files, args.seed)
        cache = ProjectPaths.of(path).suite_cache
        size = sum(file.stat().st_size for file in path.parent.glob("suites/*.yaml")) / 1e6

        def clear() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        figures = {
            "uncached": timed(lambda: load(path), clear, args.repeats),
            "cold": timed(lambda: load(path, suite_cache=cache), clear, args.repeats),
            "warm": timed(lambda: load(path, suite_cache=cache), lambda: None, args.repeats),
        }
        cached = sum(file.stat().st_size for file in cache.glob("*.json")) / 1e6
    print(
        f"{args.cases} cases in {args.files} files, {size:.1f} MB of YAML, {cached:.1f} MB cached; "
        f"median of {args.repeats}"
    )
    print(f"{'load':<10}{'wall s':>10}{'cpu s':>10}")
    for name, (wall, cpu) in figures.items():
        print(f"{name:<10}{wall:>10.2f}{cpu:>10.2f}")
    warm = figures["warm"][1]
    print(f"warm is {figures['uncached'][1] / warm:.1f}x faster than uncached (cpu)")


if __name__ == "__main__":
    main()
