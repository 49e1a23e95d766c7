"""Benchmark: the viewer on a 20,000-attempt run, and the HTML report of a 2,000-attempt run.

Makes (from a seed, as bench/grade.py does) a project with one run of `--attempts`
attempts over `--cases` cases, graded with every built-in kind that needs no judge, and
asks the viewer's application for its pages in process (through the ASGI stack: token-free
loopback, middleware, page building, templates; no network). Prints, in seconds:

- the index of the run built from its files (one pass over verdicts.jsonl and evidence.jsonl)
  and its memory, and the index that the aggregate step saved, loaded;
- the warm-up that `soev-evals view` starts beside the server (importing matplotlib,
  indexing the newest runs), and the run page right after it;
- the run page the first time without a warm-up, then the first case page;
- the median of later requests of the run page: plain, filtered by status and criterion,
  searched (the first search reads the texts to search: timed apart), a later page;
- a case page (median over 20 cases, each asked once: its attempts are read by offset);
- the runs page (its plots drawn the first time, then kept);
- the labelling queue (`/label`): its first request (one read of the run's verdicts and
  evidence) and later ones; the run holds no judged verdict (no judge here), so the
  queue's rule is timed apart, in process, on two judged verdicts per attempt of a run of
  `--attempts` attempts with 1,000 labels: arranging the candidates once, then the next
  item;
Each figure of a first request comes from a process of its own. Then it writes the HTML
report of a `--report-attempts` run and prints its size, its time and how many of the
failing dev cases it holds whole.
The targets (docs/view.md#large-runs): the first run page of a fresh viewer under 1 s
without a warm-up (it reads the index that the aggregate step saved), the queue's next item
under 200 ms, a case page under 100 ms, the report of a 2,000-attempt run under 5 MB.

    python bench/view.py                          # 20,000 attempts over 5,000 cases (k = 4)
    python bench/view.py --cases 1000             # the same attempts at k = 20
    python bench/view.py --attempts 2000 --report-attempts 500 --repeat 3   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

RUN_ID = "bench"


def make(folder: Path, *, units: int, cases: int, attempts: int, seed: int) -> None:
    """A project with one graded run of `attempts` attempts over `cases` cases, rescored
    as `soev-evals rescore --offline` does it (so with its saved index and HTML report)."""
    from grade import _criteria
    from synthetic import write_project_with_run

    from soev_pipeline.api import rescore

    folder.mkdir(parents=True)
    write_project_with_run(
        folder,
        seed=seed,
        units=units,
        cases=cases,
        attempts=attempts,
        criteria=_criteria(),
        run_id=RUN_ID,
    )
    rescore(folder / "project.yaml", RUN_ID, offline=True, runs_dir=folder / "runs")


def _rss_mb() -> float:
    """The resident memory of this process now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 1e6


def _timed(client: httpx.AsyncClient, url: str) -> float:
    async def get() -> float:
        began = time.perf_counter()
        response = await client.get(url)
        took = time.perf_counter() - began
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.text[:300]}")
        return took

    return asyncio.get_event_loop().run_until_complete(get())


def _client(folder: Path) -> tuple[Any, httpx.AsyncClient]:
    from soev_pipeline.project import load
    from soev_pipeline.view import create_app

    loaded = load(folder / "project.yaml")
    app = create_app(loaded, folder / "runs")
    asyncio.set_event_loop(asyncio.new_event_loop())
    transport = httpx.ASGITransport(app=app)
    return app, httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


def first(folder: Path) -> dict[str, Any]:
    """The first run page of a fresh viewer, as `soev-evals view` serves it (after its
    warm-up); the index built from the files and its memory, and the saved index loaded."""
    from soev_pipeline.run import RunArchive
    from soev_pipeline.run.archive import VERDICTS
    from soev_pipeline.view import warm_up
    from soev_pipeline.view.index import RunIndex
    from soev_pipeline.view.saved_index import load_index

    archive = RunArchive(folder / "runs", RUN_ID)
    scoring = archive.scorings()[-1]
    before = _rss_mb()
    began = time.perf_counter()
    RunIndex.build(scoring / VERDICTS, archive.evidence_path)
    figures = {
        "index built (s)": time.perf_counter() - began,
        "index memory (MB)": _rss_mb() - before,
    }
    began = time.perf_counter()
    saved = load_index(scoring, archive.evidence_path)
    figures["index saved, loaded (s)"] = time.perf_counter() - began if saved else math.nan
    app, client = _client(folder)
    began = time.perf_counter()
    warm_up(app)
    figures["warm-up (s)"] = time.perf_counter() - began
    figures["run page, first after warm-up (s)"] = _timed(client, f"/runs/{RUN_ID}")
    figures["search, first (s)"] = _timed(client, f"/runs/{RUN_ID}?q=termijn")
    return figures


def cold(folder: Path) -> dict[str, Any]:
    """A fresh viewer without a warm-up: its first run page, then its first case page."""
    app, client = _client(folder)
    figures = {"run page, first, no warm-up (s)": _timed(client, f"/runs/{RUN_ID}")}
    index = app.state.viewer.store.index(_archive(folder))
    case_id = sorted(index.cases)[0]
    figures["case page, first, no warm-up (s)"] = _timed(client, f"/runs/{RUN_ID}/cases/{case_id}")
    return figures


def _archive(folder: Path) -> Any:
    from soev_pipeline.run import RunArchive

    return RunArchive(folder / "runs", RUN_ID)


def measure(folder: Path, repeat: int) -> dict[str, Any]:
    """The viewer's answer times on the run in `folder`, once its first requests are done."""
    from soev_pipeline.run import RunArchive
    from soev_pipeline.view.index import RunIndex

    app, client = _client(folder)
    run = f"/runs/{RUN_ID}"
    _timed(client, run)
    _timed(client, f"{run}?q=termijn")
    index: RunIndex = app.state.viewer.store.index(RunArchive(folder / "runs", RUN_ID))
    kinds = sorted({kind for entry in index.cases.values() for kind, _ in entry.statuses})
    urls = {
        "run page (s)": run,
        "run page, filtered (s)": f"{run}?status=fail&criterion={kinds[0]}",
        "run page, searched (s)": f"{run}?q=termijn+bezwaar",
        "run page, page 40 (s)": f"{run}?page=40",
    }
    figures: dict[str, Any] = {}
    for name, url in urls.items():
        figures[name] = statistics.median(_timed(client, url) for _ in range(repeat))
    chosen = random.Random(1).sample(sorted(index.cases), min(20, len(index.cases)))
    figures["case page (s)"] = statistics.median(
        _timed(client, f"{run}/cases/{case_id}") for case_id in chosen
    )
    figures["runs page, first (s)"] = _timed(client, "/")
    figures["runs page (s)"] = statistics.median(_timed(client, "/") for _ in range(repeat))
    queue = f"/label?run={RUN_ID}"
    figures["labelling queue, first (s)"] = _timed(client, queue)
    figures["labelling queue (s)"] = statistics.median(_timed(client, queue) for _ in range(repeat))
    figures["dev cases"] = len(index.cases)
    figures["attempts of a case"] = max(entry.attempts for entry in index.cases.values())
    return figures


def queue_rule(attempts: int, repeat: int, labels: int = 1000) -> dict[str, Any]:
    """The queue's rule on `attempts` attempts of two judged criteria each, `labels` of
    them labelled: arranging the candidates (once per scoring), and the next item."""
    from datetime import UTC, datetime

    from soev_pipeline.calibration import Candidate, LabelLine, LabelQueue, ReadLabel, gather
    from soev_pipeline.core.canonical import sha256_text

    rng = random.Random(1)
    candidates = [
        Candidate(f"c-{n // 4}", n % 4, sha256_text(f"reply {n}"), kind, 0, rng.random() < 0.7)
        for n in range(attempts)
        for kind in ("behaviour.expected", "rubric.judge")
    ]
    at = datetime(2026, 12, 1, tzinfo=UTC)
    read = [
        ReadLabel(
            LabelLine.of(
                case_id=c.case_id,
                reply=f"reply {int(c.case_id[2:]) * 4 + c.attempt}",
                kind=c.kind,
                nth=0,
                passed=rng.random() < 0.6,
                by=f"jurist-{number % 3}",
                at=at,
            ),
            Path("labels/labels.jsonl"),
            number,
        )
        for number, c in enumerate(rng.sample(candidates, labels))
    ]
    items = gather(read)
    began = time.perf_counter()
    queue = LabelQueue(candidates)
    arranged = time.perf_counter() - began

    def plan() -> float:
        began = time.perf_counter()
        queue.plan(items, "jurist-9")
        return time.perf_counter() - began

    return {
        f"queue rule: arrange {len(candidates):,} verdicts (s)": arranged,
        f"queue rule: next item, {labels:,} labels (s)": statistics.median(
            plan() for _ in range(repeat)
        ),
    }


def _child(flag: str, folder: Path, repeat: int) -> dict[str, Any]:
    """One measurement in a fresh process, so that nothing is warm that a user's is not."""
    command = [sys.executable, __file__, flag, str(folder), "--repeat", str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def report(folder: Path) -> dict[str, Any]:
    """The HTML report of the run in `folder`: its time and size."""
    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive
    from soev_pipeline.view import write_html_report

    loaded = load(folder / "project.yaml")
    began = time.perf_counter()
    path = write_html_report(loaded, RunArchive(folder / "runs", RUN_ID), folder / "report.html")
    took = time.perf_counter() - began
    text = path.read_text(encoding="utf-8")
    return {
        "html report (s)": took,
        "html report (MB)": path.stat().st_size / 1e6,
        "failing dev cases": text.count('<span class="badge fail">') and _failing(text),
        "written out whole": text.count('<section class="case"'),
    }


def _failing(text: str) -> int:
    found = re.search(r"Dev cases that did not pass every attempt \((\d+)\)", text)
    return int(found.group(1)) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=20000)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--report-attempts", type=int, default=2000)
    parser.add_argument("--units", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="requests per figure (median)")
    parser.add_argument("--data", type=Path, help="keep the generated projects here")
    parser.add_argument("--first", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cold", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for flag, work in (("first", first), ("cold", cold)):
        if getattr(args, flag) is not None:
            print(json.dumps(work(getattr(args, flag))))
            return
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.repeat)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        root = args.data or Path(scratch)
        big = root / f"view-u{args.units}-c{args.cases}-a{args.attempts}-s{args.seed}"
        if not (big / "runs" / RUN_ID / "scorings").exists():
            make(big, units=args.units, cases=args.cases, attempts=args.attempts, seed=args.seed)
        small_cases = max(1, args.report_attempts // 4)
        small = root / f"view-u{args.units}-c{small_cases}-a{args.report_attempts}-s{args.seed}"
        if not (small / "runs" / RUN_ID / "scorings").exists():
            make(
                small,
                units=args.units,
                cases=small_cases,
                attempts=args.report_attempts,
                seed=args.seed,
            )
        figures = _child("--first", big, args.repeat)
        figures |= _child("--cold", big, args.repeat)
        figures |= _child("--measure", big, args.repeat)
        figures |= queue_rule(args.attempts, args.repeat)
        shown = report(small)
    print(
        f"viewer on a run of {args.attempts:,} attempts ({args.cases:,} cases, "
        f"{figures.pop('dev cases'):,} of them dev, {figures.pop('attempts of a case')} "
        f"attempts each), median of {args.repeat} requests:"
    )
    for name, value in figures.items():
        print(f"  {name:<44} {value:8.3f}")
    print(f"html report of a run of {args.report_attempts:,} attempts ({small_cases:,} cases):")
    for name, value in shown.items():
        print(
            f"  {name:<32} {value:8.3f}" if isinstance(value, float) else f"  {name:<32} {value:8d}"
        )


if __name__ == "__main__":
    main()
