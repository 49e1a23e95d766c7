"""What a run costs after its last attempt, step by step, each way it can be done.

`bench/throughput.py` times the whole command, and its tail (last attempt to exit) moves
by a few tenths of a second with the load of the machine. This script times the steps of
that tail alone, in one process, alternating the ways each can be done, so that the load
falls on both:

- aggregate: the report of a new run folded while it was graded (`Scoring.fold` and the
  stream's ledger), against the report built by reading verdicts.jsonl and
  evidence.jsonl back (a scoring read from disk);
- pages: `write_scoring_pages` (index.json and report.html), given the attempts and the
  comparison that the aggregate step made (`api.execute` passes them), against reading
  them again;
- record: `record.record` into the project's Dagster instance, opened and connected ahead
  (`record.open_ahead`, what `soev-evals run` does while its attempts run), against opened
  at the record;
- lookup: `record.latest_prompts_versions` after `--rescores` materializations of each of
  the runs' `verdicts`;
- the three in turn (aggregate, pages, record), against the three as `soev-evals run`
  does them: the record's first part (`record.Recording.graded`) on a thread while the
  run is aggregated and its pages written, then its report (`Recording.finish`).

It runs two runs first (the second has the first to compare with, as a project's runs
usually do) through `soev_pipeline.api`, against the bundled reference assistant.

    python bench/tail.py                     # 2,000 attempts, 5 times each way

Each step is timed as the command runs it: with the command's collector thresholds
(`COLLECTOR_THRESHOLDS`), and the report and the pages with the collector paused
(`collector_paused`, as `api.execute` makes them). It prints the median and the fastest of
each: on a shared machine the fastest is the better measure of what a step costs itself.
    python bench/tail.py --attempts 500 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).parent))

from throughput import prepare_instance, start_assistant, write_project

from soev_pipeline.cli.main import COLLECTOR_THRESHOLDS

if TYPE_CHECKING:
    from soev_pipeline.api import Evaluation


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="times each way (median)")
    parser.add_argument("--rescores", type=int, default=20, help="for the lookup")
    args = parser.parse_args()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)  # as the command does
    process, url = start_assistant(0.0)
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = write_project(Path(folder), url, args.attempts, 32)
            home = project.parent / "dagster-home"
            prepare_instance(home)
            os.environ["DAGSTER_HOME"] = str(home)
            measure(project, args.repeat, args.rescores)
    finally:
        process.terminate()
        process.wait()


def _pages(evaluation: Evaluation) -> None:
    from soev_pipeline.run.heap import collector_paused
    from soev_pipeline.run.service import aggregate_run
    from soev_pipeline.view import write_scoring_pages

    assert evaluation.scoring is not None
    with collector_paused():
        made = aggregate_run(evaluation.archive, evaluation.scoring)
        known = [made.attempts] if made.previous is None else [made.attempts, made.previous]
        write_scoring_pages(
            evaluation.loaded,
            evaluation.archive,
            evaluation.scoring.path,
            known=known,
            comparison=made.report.previous,
        )


def in_turn(evaluation: Evaluation) -> None:
    from soev_pipeline.orchestration import record

    _pages(evaluation)
    record.record(evaluation)


def alongside(evaluation: Evaluation) -> None:
    from soev_pipeline.orchestration import record

    recording = record.Recording(evaluation.paths)
    graded = replace(evaluation, report=None)
    first = threading.Thread(target=recording.graded, args=(graded,))
    first.start()
    _pages(evaluation)
    first.join()
    recording.finish(evaluation)


def measure(project: Path, repeat: int, rescores: int) -> None:
    import dagster as dg

    from soev_pipeline import api
    from soev_pipeline.orchestration import record
    from soev_pipeline.orchestration.keys import asset_key
    from soev_pipeline.run.heap import collector_paused
    from soev_pipeline.run.service import aggregate, aggregate_run
    from soev_pipeline.view import write_scoring_pages

    api.run_sync(api.evaluate_run(project, run_id="earlier"))
    evaluation = api.run_sync(api.evaluate_run(project, run_id="bench"))
    scoring, archive = evaluation.scoring, evaluation.archive
    assert scoring is not None and scoring.fold is not None and scoring.ledger is not None
    times: dict[str, list[float]] = {}

    def add(name: str, work: Callable[[], object]) -> None:
        times.setdefault(name, []).append(_timed(work))

    def paused(work: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with collector_paused():
                return work()

        return run

    def record_ahead() -> float:
        record.open_ahead(evaluation.paths)
        return _timed(lambda: record.record(evaluation))

    made = aggregate_run(archive, scoring)
    known = [made.attempts] if made.previous is None else [made.attempts, made.previous]
    for _ in range(repeat):
        add("aggregate, folded while graded", paused(lambda: aggregate(archive, scoring)))
        add("aggregate, files read back", paused(lambda: aggregate(archive, scoring.path)))
        add(
            "pages, given what aggregate read",
            paused(
                lambda: write_scoring_pages(
                    evaluation.loaded,
                    archive,
                    scoring.path,
                    known=known,
                    comparison=made.report.previous,
                )
            ),
        )
        add(
            "pages, reading it again",
            paused(lambda: write_scoring_pages(evaluation.loaded, archive, scoring.path)),
        )
        times.setdefault("record, instance opened ahead", []).append(record_ahead())
        add("record, instance opened then", lambda: record.record(evaluation))
        record.open_ahead(evaluation.paths)
        add("the three in turn", lambda: in_turn(evaluation))
        record.open_ahead(evaluation.paths)
        add("the three, the record alongside", lambda: alongside(evaluation))
    with record.project_instance(evaluation.paths) as instance:
        key = asset_key("verdicts", None)
        for _ in range(rescores):
            for run in ("earlier", "bench"):
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(key, partition=run, metadata={"prompts_version": "x"})
                )
        read: list[int] = []
        fetch = instance.fetch_materializations

        def counted(*args: object, **kwargs: object) -> object:
            result = fetch(*args, **kwargs)  # type: ignore[arg-type]
            read.append(len(result.records))
            return result

        instance.fetch_materializations = counted  # type: ignore[method-assign]
        add("lookup of prompts versions", lambda: record.latest_prompts_versions(instance, key))
    total = sum(1 for _ in archive.iter_attempts())
    print(f"\nthe steps after the last attempt: {total} attempts ({repeat} times each)")
    print(f"  {'':<36}{'median':>9}{'fastest':>9}")
    for name, values in times.items():
        print(f"  {name:<36}{statistics.median(values):>7.3f} s{min(values):>7.3f} s")
    materializations = 2 * (rescores + repeat * 2 + 1)
    print(f"  the lookup read {read[-1] if read else 0} records of about {materializations}")


if __name__ == "__main__":
    main()
