"""Benchmark: an offline rescore of many attempts with every built-in kind that needs no judge.

Generates, from a seed, a project on disk: a corpus of Dutch-like law units, one suite of
cases that share every non-judge kind of `builtin_registry()`, and a run archive whose
evidence quotes the corpus, mentions articles and cites units (see `synthetic.py`). It
then rescores that run through the functions that `soev-evals rescore` runs, and prints
per corpus size and mode (serial: `SOEV_GRADE_WORKERS=1`; parallel: 2 workers) the median
of the phases:

- suite load: `project.load` (project.yaml, the suite, the corpus file);
- index: building the corpus indexes (`warm`);
- grading: `run.service.grade`, which streams the evidence, grades it and writes verdicts.jsonl;
- writing: `run.service.aggregate`, which builds the report and writes report.json;

their sum (the rescore), the CPU seconds of all its processes, and its memory: the peak
RSS of the main process after each phase, of the largest worker, and the peak of the
summed PSS of the process tree (sampled every half second; PSS counts a page that the
workers share with the main process once). `report --json` is timed apart, in a process of
its own: reading the report back and encoding it as `soev-evals report RUN --json` does.

Last, `soev-evals rescore RUN --offline` is timed as a user runs it, the whole command
(start-up, grading with the default workers, the report printed, the scoring recorded in
Dagster): its wall time, peak RSS, and how much longer it takes on the largest corpus than
on the smallest.

Each measurement runs in a fresh process; the modes alternate, so that the load of other
processes on the machine falls on both. Both modes must write byte-identical verdicts; the
table says whether they did.

    python bench/grade.py                                     # 5,000 and 50,000 units
    python bench/grade.py --units 2000 --attempts 500 --repeat 1   # a quick smoke test
    python bench/grade.py --units 5000 --kinds 2000          # grading seconds per kind
    python bench/grade.py --units 5000 --crossover 50 100 200 400  # when workers pay
    python bench/grade.py --units 5000 --profile 25          # where grading's CPU goes
    python bench/grade.py --units 5000 50000 --growth 20000 --against ../old  # the corpus
    python bench/grade.py --units 5000 50000 --repeat 1 --against ../old  # now / before

With `--growth N`, only the corpus's share of a rescore is measured, at each size, in
fresh processes: reading the corpus, building its two indexes, looking up the quotes and
article mentions of N attempts, and the memory that a forked grading worker copies from
its parent while it does those look-ups; the last column is the growth from the smallest
corpus to the largest. With `--against DIR` too, this script also runs on DIR's code.

With `--against DIR`, the checkout in DIR (another worktree of this repository, at the
commit to compare with, with its own .venv) is measured too, on the same generated data,
the two taking turns; each gets its tables, and then the ratios of now to before.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

PARAMS: dict[str, dict[str, Any]] = {
    "reply.language": {"language": "nl", "min_share": 0.5},
    "reply.contains": {"substrings": ["artikel"], "regex": [r"\btermijn\w*"]},
    "reply.not_contains": {"substrings": ["als taalmodel"], "regex": [r"\bgarantie\b"]},
    "reply.max_length": {"max": 2500},
    "privacy.none": {},
    "citations.required": {"min": 0.5},
    "citations.forbidden": {"match": "hierarchical"},
    "citations.unseen": {"match": "hierarchical"},
    "usage.max_tokens": {"max": 6000},
    "usage.max_seconds": {"max": 20},
}
RUN_ID = "bench"
MODES = {"serial": "1", "parallel": "2"}
ROWS = [
    ("suite load (s)", "load_s"),
    ("index (s)", "index_s"),
    ("grading (s)", "grade_s"),
    ("writing (s)", "write_s"),
    ("rescore wall (s)", "rescore_s"),
    ("CPU, all processes (s)", "cpu_s"),
    ("RSS after index (MB)", "indexed_mb"),
    ("RSS after grading (MB)", "graded_mb"),
    ("RSS after writing (MB)", "written_mb"),
    ("RSS, largest worker (MB)", "worker_mb"),
    ("PSS, process tree (MB)", "pss_mb"),
    ("report --json (s)", "read_s"),
    ("report --json RSS (MB)", "read_mb"),
]


@dataclass(frozen=True)
class Tree:
    """A checkout of the code to measure: its Python (of its own .venv) and this script."""

    name: str
    python: Path
    script: Path

    @classmethod
    def this(cls) -> Tree:
        return cls("now", Path(sys.executable), Path(__file__).resolve())

    @classmethod
    def at(cls, folder: Path) -> Tree:
        """The checkout in `folder`, run with `folder/.venv/bin/python`."""
        python, script = folder / ".venv" / "bin" / "python", folder / "bench" / "grade.py"
        for path in (python, script):
            if not path.exists():
                raise SystemExit(f"--against {folder}: {path} does not exist")
        return cls("before", python, script)

    @property
    def soev(self) -> Path:
        return self.python.with_name("soev-evals")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _criteria() -> list[dict[str, Any]]:
    """Every non-judge built-in kind with bench parameters, as suite-file criteria."""
    from soev_pipeline.core.models import CriterionSpec
    from soev_pipeline.criteria import builtin_registry

    registry = builtin_registry()
    chosen = []
    for name in registry:
        if "judge" in registry.needs(name):
            continue
        raw = {"kind": name, **PARAMS.get(name, {})}
        try:
            registry.validate(CriterionSpec.model_validate(raw))
        except Exception as exc:
            sys.stderr.write(f"skipped kind {name}: {exc}\n")
            continue
        chosen.append(raw)
    return chosen


def make(folder: Path, units: int, attempts: int, seed: int) -> None:
    """Write the project and the run archive of one corpus size into `folder`."""
    from synthetic import write_project_with_run

    cases = max(1, min(1000, attempts // 4))
    write_project_with_run(
        folder,
        seed=seed,
        units=units,
        cases=cases,
        attempts=attempts,
        criteria=_criteria(),
        run_id=RUN_ID,
    )


def _warm(loaded: Any) -> None:
    warm = getattr(loaded.context.corpus, "warm", None)
    if callable(warm):
        warm()


def rescore(folder: Path) -> dict[str, Any]:
    """Rescore the run in `folder` once, in this process; return the phases' figures."""
    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive
    from soev_pipeline.run.service import aggregate, grade

    began = time.perf_counter()
    loaded = load(folder / "project.yaml")
    load_s = time.perf_counter() - began

    mark = time.perf_counter()
    _warm(loaded)
    index_s = time.perf_counter() - mark
    indexed_mb = _peak_mb()

    archive = RunArchive(folder / "runs", RUN_ID)
    for scoring in archive.scorings():
        shutil.rmtree(scoring)
    mark = time.perf_counter()
    scoring = asyncio.run(grade(loaded, archive, judge=None, offline=True))
    scoring_dir, summary = scoring.path, scoring.summary
    grade_s = time.perf_counter() - mark
    graded_mb = _peak_mb()

    mark = time.perf_counter()
    aggregate(archive, scoring_dir)
    write_s = time.perf_counter() - mark
    rescore_s = time.perf_counter() - began

    verdicts = (scoring_dir / "verdicts.jsonl").read_bytes()
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "attempts": summary.attempts,
        "kinds": len(summary.criterion_versions),
        "load_s": load_s,
        "index_s": index_s,
        "grade_s": grade_s,
        "write_s": write_s,
        "rescore_s": rescore_s,
        "cpu_s": own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime,
        "indexed_mb": indexed_mb,
        "graded_mb": graded_mb,
        "written_mb": own.ru_maxrss / 1024,
        "worker_mb": workers.ru_maxrss / 1024,
        "verdicts_sha": hashlib.sha256(verdicts).hexdigest()[:16],
        "verdicts_mb": len(verdicts) / 1e6,
        "report_mb": (scoring_dir / "report.json").stat().st_size / 1e6,
    }


def report_json(folder: Path) -> dict[str, Any]:
    """Read the run's report back and encode it, as `report RUN --json` does."""
    import io

    from soev_pipeline.cli.render import write_report_json
    from soev_pipeline.run import RunArchive, read_report

    class Counted(io.TextIOBase):
        """Counts the bytes written, as stdout to a file would take them."""

        size = 0

        def write(self, text: str) -> int:
            self.size += len(text.encode())
            return len(text)

    began = time.perf_counter()
    report = read_report(RunArchive(folder / "runs", RUN_ID))
    out = Counted()
    write_report_json(report, out)
    return {
        "read_s": time.perf_counter() - began,
        "read_mb": _peak_mb(),
        "printed_mb": out.size / 1e6,
    }


def _tree_pss_kb(pid: int) -> int:
    """The summed PSS of `pid` and its children, in kB (0 for a process that is gone)."""
    total = 0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for each in [pid, *map(int, children)]:
        try:
            for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total


def _child(folder: Path, flag: str, env: dict[str, str], tree: Tree) -> tuple[dict[str, Any], int]:
    """Run `tree`'s script with `flag` in a fresh process; its figures and its tree's peak PSS."""
    command = [str(tree.python), str(tree.script), flag, str(folder)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.5):
            peak = max(peak, _tree_pss_kb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{flag} {folder} failed with status {process.returncode}")
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures, peak


def measure(folder: Path, mode: str, tree: Tree) -> dict[str, Any]:
    """Rescore in `mode` in a fresh process, then time `report --json` in another."""
    env = {**os.environ, "SOEV_GRADE_WORKERS": MODES[mode]}
    result, peak = _child(folder, "--rescore", env, tree)
    result["pss_mb"] = peak / 1024
    result.update(_child(folder, "--report-json", env, tree)[0])
    return result


def command(folder: Path, tree: Tree) -> dict[str, float]:
    """`soev-evals rescore RUN --offline` as a user runs it: its wall time, peak RSS, and
    CPU seconds (with its grading workers': the kernel adds the children a process waited
    for), the steadier figure on a machine that other work keeps busy.

    The whole command: Python's start, the project (suites from the suite cache, which the
    untimed first command of `_data` wrote), Dagster, grading with the default workers,
    the report written, read back and printed (to /dev/null).
    """
    began = time.perf_counter()
    process = subprocess.Popen(
        [str(tree.soev), "rescore", RUN_ID, "--offline", "--project", str(folder / "project.yaml")],
        stdout=subprocess.DEVNULL,
        env={key: value for key, value in os.environ.items() if key != "SOEV_GRADE_WORKERS"},
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"soev-evals rescore {folder} failed with status {status}")
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_s": wall, "rss_mb": usage.ru_maxrss / 1024, "cpu_s": cpu}


def _commands(figures: dict[int, list[dict[str, float]]], title: str = "") -> str:
    lines = ["", f"soev-evals rescore RUN --offline, the whole command{title} (median, min–max):"]
    for units, runs in figures.items():
        walls = [run["wall_s"] for run in runs]
        rss = max(run["rss_mb"] for run in runs)
        cpu = statistics.median(run["cpu_s"] for run in runs)
        lines.append(
            f"  {units:>7,} units  {statistics.median(walls):6.2f} s "
            f"({min(walls):.2f}–{max(walls):.2f})  CPU {cpu:6.2f} s  peak RSS {rss:.0f} MB"
        )
    if len(figures) > 1:
        for what, key in (("wall", "wall_s"), ("CPU", "cpu_s")):
            medians = [statistics.median(run[key] for run in runs) for runs in figures.values()]
            lines.append(
                f"  growth from the smallest corpus to the largest, {what}: "
                f"{medians[-1] / medians[0]:.2f}×"
            )
    return "\n".join(lines) + "\n"


def _private_dirty_mb() -> float:
    """This process's private dirty memory: for a forked worker, the pages it copied."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) / 1024
    return 0.0


def corpus_phases(folder: Path, count: int) -> dict[str, float]:
    """The corpus's share of a rescore, phase by phase, in this (fresh) process.

    Each phase's wall and CPU seconds and the resident memory after it: reading the
    corpus, building the quote index and the mention index, then the look-ups of the
    quotes and article mentions of the first `count` attempts. Last, a forked process
    (as a grading worker is) runs those look-ups once more: the memory it copies from
    this one is what each worker adds to the process tree.
    """
    import gc

    from soev_pipeline.corpus import load_corpus
    from soev_pipeline.criteria.citations import _mentions, quoted_spans
    from soev_pipeline.run import RunArchive

    figures: dict[str, float] = {}
    mark, cpu = time.perf_counter(), time.process_time()

    def phase(name: str) -> None:
        nonlocal mark, cpu
        figures[f"{name}_s"] = time.perf_counter() - mark
        figures[f"{name}_cpu"] = time.process_time() - cpu
        figures[f"{name}_mb"] = _current_mb()
        mark, cpu = time.perf_counter(), time.process_time()

    import numpy  # noqa: F401  (imported by the first index build: not the corpus's cost)

    figures["start_mb"] = _current_mb()
    phase("start")
    corpus = load_corpus(folder / "corpus.jsonl")
    figures["units"] = len(corpus)
    phase("load")
    quotes_index = corpus.quote_index()
    figures["index_mb_arrays"] = quotes_index.nbytes / 2**20
    phase("quotes")
    corpus.mention_index()
    phase("mentions")
    replies = [
        item.reply
        for item in islice(RunArchive(folder / "runs", RUN_ID).iter_evidence(), count)
        if item.reply
    ]
    quotes = [quote for reply in replies for quote in quoted_spans(reply)]
    mark, cpu = time.perf_counter(), time.process_time()

    def look_up() -> None:
        for quote in quotes:
            quotes_index.find(quote)
        for reply in replies:
            _mentions(reply, corpus)

    look_up()
    phase("lookups")
    gc.collect()
    gc.freeze()  # as the pool's workers do
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: look up again, report the pages copied
        os.close(reading)
        before = _private_dirty_mb()
        look_up()
        os.write(writing, f"{_private_dirty_mb() - before}".encode())
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        figures["worker_copied_mb"] = float(pipe.read())
    os.waitpid(pid, 0)
    return figures


def _current_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


GROWTH_ROWS = [
    ("units", "units", "{:,.0f}"),
    ("read the corpus (s)", "load_s", "{:.2f}"),
    ("  CPU (s)", "load_cpu", "{:.2f}"),
    ("build the quote index (s)", "quotes_s", "{:.2f}"),
    ("  CPU (s)", "quotes_cpu", "{:.2f}"),
    ("build the mention index (s)", "mentions_s", "{:.2f}"),
    ("  CPU (s)", "mentions_cpu", "{:.2f}"),
    ("look-ups of the attempts (s)", "lookups_s", "{:.2f}"),
    ("  CPU (s)", "lookups_cpu", "{:.2f}"),
    ("corpus work, CPU (s)", "corpus_cpu", "{:.2f}"),
    ("RSS before (MB)", "start_mb", "{:.0f}"),
    ("RSS, corpus read (MB)", "load_mb", "{:.0f}"),
    ("RSS, indexes built (MB)", "mentions_mb", "{:.0f}"),
    ("  quote index arrays (MB)", "index_mb_arrays", "{:.0f}"),
    ("copied by a worker (MB)", "worker_copied_mb", "{:.0f}"),
]


def growth(
    root: Path,
    units: list[int],
    attempts: int,
    seed: int,
    count: int,
    repeat: int,
    against: Path | None = None,
) -> None:
    """Print the corpus's share of a rescore at each corpus size (`corpus_phases`), each
    measurement in a fresh process, the sizes taking turns; medians of `repeat`.

    With `against`, this script also runs with that checkout's Python, so on its code
    (a script's own folder, not the working directory, leads its module path).
    """
    trees = [Tree.this()]
    if against is not None:
        trees.append(Tree("before", Tree.at(against).python, Tree.this().script))
    runs: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    folders = {size: _data(root, size, attempts, seed) for size in units}
    for _ in range(repeat):
        for size, folder in folders.items():
            for tree in trees:
                flag = f"--corpus-phases={count}"
                runs[(tree.name, size)].append(_child(folder, flag, dict(os.environ), tree)[0])
    for each in runs.values():
        for run in each:
            run["corpus_cpu"] = sum(run[f"{name}_cpu"] for name in ("load", "quotes", "mentions"))
    out = sys.stdout
    out.write(
        f"the corpus's share of a rescore, {count:,} attempts looked up; median of {repeat}\n"
    )
    for tree in trees:
        out.write(f"\n{tree.name}: {tree.python.parents[2]}\n" if len(trees) > 1 else "\n")
        out.write(f"{'':30}" + "".join(f"{size:>12,}u" for size in units))
        out.write(f"{'growth':>10}\n" if len(units) > 1 else "\n")
        for label, key, shape in GROWTH_ROWS:
            values = [
                statistics.median(run[key] for run in runs[(tree.name, size)]) for size in units
            ]
            out.write(f"{label:30}" + "".join(f"{shape.format(v):>13}" for v in values))
            if len(units) > 1:
                out.write(f"{values[-1] - values[0]:>+10.2f}" if key != "units" else "")
            out.write("\n")


def kinds(folder: Path, count: int, chunk: int = 100) -> None:
    """Grade the first `count` attempts here, a kind at a time, and print seconds per kind.

    As grading does, the attempts go in chunks of `chunk`: a kind with a `prepare` step
    (`reply.language`) first prepares the whole chunk, and that time counts as the kind's.
    """
    from soev_pipeline.core.ports import CriterionContext
    from soev_pipeline.judges import LangidDetector
    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive

    loaded = load(folder / "project.yaml")
    _warm(loaded)
    registry = loaded.registry
    cases = {case.id: case for case in loaded.cases()}
    bound = {
        case.id: [
            registry.bind(spec, loaded.params.get((case.id, index)))
            for index, spec in enumerate(case.criteria)
        ]
        for case in cases.values()
    }
    evidence = list(islice(RunArchive(folder / "runs", RUN_ID).iter_evidence(), count))
    detector = LangidDetector()
    detector.detect("Het model wordt hier geladen, niet in de eerste meting.")
    ctx = CriterionContext(
        messages=loaded.context.messages, corpus=loaded.context.corpus, language_detector=detector
    )
    prepared = {name for name in registry if registry.get(name).prepare is not None}
    seconds: dict[str, float] = defaultdict(float)
    statuses: dict[str, Counter[str]] = defaultdict(Counter)

    async def grade() -> None:
        for start in range(0, len(evidence), chunk):
            items = evidence[start : start + chunk]
            for name in prepared:
                pairs = [
                    (spec, item)
                    for item in items
                    for spec in cases[item.case_id].criteria
                    if spec.kind == name
                ]
                began = time.perf_counter()
                registry.prepare(pairs, ctx)
                seconds[name] += time.perf_counter() - began
            for item in items:
                case = cases[item.case_id]
                for spec, criterion in zip(case.criteria, bound[case.id], strict=True):
                    began = time.perf_counter()
                    verdict = await criterion.evaluate(case, item, ctx)
                    seconds[spec.kind] += time.perf_counter() - began
                    statuses[spec.kind][verdict.status] += 1

    asyncio.run(grade())
    total = sum(seconds.values())
    sys.stdout.write(f"{len(evidence):,} attempts: {1000 * total / len(evidence):.2f} ms each\n")
    for kind, value in sorted(seconds.items(), key=lambda pair: -pair[1]):
        shown = ", ".join(f"{s} {n}" for s, n in sorted(statuses[kind].items()))
        share = f"{100 * value / total:.0f} %"
        sys.stdout.write(f"  {kind:30}{value:8.2f} s {share:>6}   {shown}\n")


PHASES = [
    ("read evidence (archive lines to models)", "soev_pipeline/run/archive.py", "iter_attempts"),
    ("grade the chunked kinds", "soev_pipeline/run/grading.py", "grade"),
    ("  prepare a chunk (kinds' shared work)", "soev_pipeline/criteria/registry.py", "prepare"),
    ("    detect languages", "soev_pipeline/judges/language.py", "detect_many"),
    ("  evaluate the criteria (registry)", "soev_pipeline/criteria/registry.py", "evaluate"),
    ("write verdicts lines", "soev_pipeline/run/grading.py", "_write"),
    ("  fold them into the report", "soev_pipeline/run/report.py", "add_line"),
]
"""Functions whose cumulative time stands for a phase of grading: (label, file, name)."""


def profile(folder: Path, top: int) -> None:
    """Grade the run here, serially, under cProfile; print where the time goes.

    The project is loaded and the corpus indexed before the profiler starts: what it sees
    is `run.service.grade` in one process (`SOEV_GRADE_WORKERS=1`), from the first
    evidence line read to the last verdicts line written. Printed: the phases (the
    cumulative time of the function that stands for each), each kind's evaluator, and
    the `top` functions by cumulative and by own time, each with its share of the total.
    """
    import cProfile
    import pstats

    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive
    from soev_pipeline.run.service import grade

    os.environ["SOEV_GRADE_WORKERS"] = "1"
    loaded = load(folder / "project.yaml")
    _warm(loaded)
    archive = RunArchive(folder / "runs", RUN_ID)
    for scoring in archive.scorings():
        shutil.rmtree(scoring)
    profiler = cProfile.Profile()
    profiler.enable()
    scoring = asyncio.run(grade(loaded, archive, judge=None, offline=True))
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total: float = stats.total_tt  # type: ignore[attr-defined]
    attempts = scoring.summary.attempts

    def where(key: Any) -> str:
        file, line, name = key
        if file == "~":
            return name
        for marker in ("soev_pipeline/", "site-packages/", "lib/python3"):
            if marker in file:
                file = file[file.index(marker) + len(marker) :]
                break
        return f"{file}:{line}({name})"

    def cumulative(file: str, name: str) -> float:
        """The largest cumulative time of a function `name` of `file` (an outer one holds
        the inner ones it calls, such as a detector that wraps another)."""
        found = [v[3] for k, v in raw.items() if k[0].endswith(file) and k[2] == name]
        return max(found, default=0.0)

    out = sys.stdout
    out.write(f"{attempts:,} attempts graded in one process: {total:.2f} s under the profiler, ")
    out.write(f"{1000 * total / max(attempts, 1):.2f} ms an attempt\n\nphases (cumulative)\n")
    for label, file, name in PHASES:
        seconds = cumulative(file, name)
        out.write(f"  {label:50}{seconds:8.2f} s {100 * seconds / total:5.1f} %\n")
    out.write("\nkinds (cumulative time of the evaluator)\n")
    by_kind = []
    for name in loaded.registry:
        code = getattr(loaded.registry.get(name).evaluator, "__code__", None)
        if code is not None:
            key = (code.co_filename, code.co_firstlineno, code.co_name)
            by_kind.append((raw.get(key, (0, 0, 0, 0.0))[3], name))
    for seconds, name in sorted(by_kind, reverse=True):
        if seconds > 0:
            out.write(f"  {name:50}{seconds:8.2f} s {100 * seconds / total:5.1f} %\n")
    for title, column in (("cumulative", 3), ("own", 2)):
        out.write(f"\ntop {top} functions by {title} time\n")
        ranked = sorted(raw.items(), key=lambda item: -item[1][column])[:top]
        for key, value in ranked:
            seconds = value[column]
            share = 100 * seconds / total
            out.write(f"  {seconds:8.2f} s {share:5.1f} % {value[1]:>9,} calls  {where(key)}\n")


def crossover(folder: Path, sizes: list[int], repeat: int) -> None:
    """Grade the first n attempts in one process and with two workers, for each n."""
    from soev_pipeline.core.ports import CriterionContext
    from soev_pipeline.judges import LangidDetector
    from soev_pipeline.project import load
    from soev_pipeline.run import RunArchive, grade_evidence

    loaded = load(folder / "project.yaml")
    _warm(loaded)
    evidence = list(RunArchive(folder / "runs", RUN_ID).iter_evidence())
    ctx = CriterionContext(
        messages=loaded.context.messages,
        corpus=loaded.context.corpus,
        language_detector=LangidDetector(),
    )

    def grade(count: int, workers: int) -> float:
        with tempfile.TemporaryDirectory() as scoring:
            began = time.perf_counter()
            work = grade_evidence(
                loaded, ctx, evidence[:count], Path(scoring), total=count, workers=workers
            )
            asyncio.run(work)
            return time.perf_counter() - began

    sys.stdout.write(f"{'attempts':>10}{'one process (s)':>18}{'two workers (s)':>18}\n")
    for count in sizes:
        alone, pooled = [], []
        for _ in range(repeat):
            alone.append(grade(count, 1))
            pooled.append(grade(count, 2))
        line = f"{count:>10}{statistics.median(alone):>18.3f}{statistics.median(pooled):>18.3f}"
        sys.stdout.write(line + "\n")


def _table(columns: list[tuple[str, list[dict[str, Any]]]], repeat: int) -> str:
    first = columns[0][1][0]
    lines = [
        f"{first['attempts']:,} attempts × {first['kinds']} kinds; median of {repeat}, "
        "min–max below",
        "",
        f"{'':26}" + "".join(f"{name:>20}" for name, _ in columns),
    ]
    for label, key in ROWS:
        values = [[run[key] for run in runs] for _, runs in columns]
        lines.append(f"{label:26}" + "".join(f"{statistics.median(v):>20.2f}" for v in values))
        if repeat > 1:
            spreads = "".join(f"{min(v):.1f}–{max(v):.1f}".rjust(20) for v in values)
            lines.append(f"{'':26}{spreads}")
    sizes = [("verdicts.jsonl (MB)", "verdicts_mb"), ("report.json (MB)", "report_mb")]
    sizes.append(("report --json text (MB)", "printed_mb"))
    for label, key in sizes:
        lines.append(f"{label:26}" + "".join(f"{runs[0][key]:>20.2f}" for _, runs in columns))
    by_size: dict[str, set[str]] = {}
    for name, runs in columns:
        by_size.setdefault(name.split()[0], set()).update(run["verdicts_sha"] for run in runs)
    same = all(len(digests) == 1 for digests in by_size.values())
    lines.append(f"\nverdicts.jsonl byte-identical across modes and runs: {same}")
    return "\n".join(lines) + "\n"


RATIOS = [
    ("grading, one process", "serial", "grade_s"),
    ("grading, two workers", "parallel", "grade_s"),
    ("rescore wall, two workers", "parallel", "rescore_s"),
    ("CPU of the one-process rescore", "serial", "cpu_s"),
    ("PSS of the two-worker tree (MB)", "parallel", "pss_mb"),
]


def _ratios(
    runs: dict[tuple[str, int, str], list[dict[str, Any]]],
    commands: dict[tuple[str, int], list[dict[str, float]]],
    units: list[int],
) -> str:
    """Now against before, per corpus size: the medians and their ratio."""
    lines = ["", f"{'now / before (medians)':42}{'before':>10}{'now':>10}{'ratio':>8}"]

    def row(label: str, before: float, now: float) -> None:
        lines.append(f"{label:42}{before:>10.2f}{now:>10.2f}{now / before:>8.2f}")

    for size in units:
        for label, mode, key in RATIOS:
            if (size_runs := runs.get(("now", size, mode))) and runs.get(("before", size, mode)):
                before = statistics.median(run[key] for run in runs[("before", size, mode)])
                row(f"{label}, {size:,}u", before, statistics.median(r[key] for r in size_runs))
        walls = {
            name: statistics.median(run["wall_s"] for run in commands[(name, size)])
            for name in ("before", "now")
        }
        row(f"soev-evals rescore --offline, {size:,}u", walls["before"], walls["now"])
        cpus = {
            name: statistics.median(run["cpu_s"] for run in commands[(name, size)])
            for name in walls
        }
        row(f"  its CPU (s), {size:,}u", cpus["before"], cpus["now"])
        rss = {name: max(run["rss_mb"] for run in commands[(name, size)]) for name in walls}
        row(f"peak RSS of the command (MB), {size:,}u", rss["before"], rss["now"])
    if len(units) > 1:
        for what, key in (("wall", "wall_s"), ("CPU", "cpu_s")):
            growth = {
                name: statistics.median(run[key] for run in commands[(name, units[-1])])
                / statistics.median(run[key] for run in commands[(name, units[0])])
                for name in ("before", "now")
            }
            row(f"growth of the command, {what}", growth["before"], growth["now"])
    same = all(
        len(
            {run["verdicts_sha"] for (_, at, _), each in runs.items() if at == size for run in each}
        )
        == 1
        for size in units
    )
    lines.append(f"verdicts.jsonl byte-identical before and now, at each size: {same}")
    return "\n".join(lines) + "\n"


def _data(root: Path, units: int, attempts: int, seed: int) -> Path:
    """The project of one corpus size under `root`, made unless it is there already."""
    folder = root / f"u{units}-a{attempts}-s{seed}"
    if not (folder / "runs" / RUN_ID / "evidence.jsonl").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        make_it = [sys.executable, __file__, "--make", str(folder), "--units", str(units)]
        make_it += ["--attempts", str(attempts), "--seed", str(seed)]
        subprocess.run(make_it, check=True)
        command(
            folder, Tree.this()
        )  # untimed: makes the project's Dagster instance and suite cache
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--attempts", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (median)")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--data", type=Path, help="keep the generated projects here")
    parser.add_argument("--kinds", type=int, metavar="N", help="time each kind over N attempts")
    parser.add_argument(
        "--crossover",
        type=int,
        nargs="+",
        metavar="N",
        help="time grading the first N attempts in one process and with two workers",
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="TOP",
        help="grade in one process under cProfile; print the phases, kinds and TOP functions",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="also measure the checkout in DIR (run with its own .venv), alternating with "
        "this one on the same data, and print now / before for each figure",
    )
    parser.add_argument("--make", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rescore", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--report-json", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--corpus-phases", type=int, help=argparse.SUPPRESS)
    parser.add_argument("folder", type=Path, nargs="?", help=argparse.SUPPRESS)
    parser.add_argument(
        "--growth",
        type=int,
        metavar="N",
        help="time the corpus's phases (reading, indexes, look-ups of N attempts, what a "
        "worker copies) at each corpus size, in fresh processes",
    )
    args = parser.parse_args()
    if args.make is not None:
        make(args.make, args.units[0], args.attempts, args.seed)
        return
    if args.corpus_phases is not None:
        sys.stdout.write(json.dumps(corpus_phases(args.folder, args.corpus_phases)) + "\n")
        return
    if args.rescore is not None or args.report_json is not None:
        figures = rescore(args.rescore) if args.rescore else report_json(args.report_json)
        sys.stdout.write(json.dumps(figures) + "\n")
        return
    with tempfile.TemporaryDirectory() as scratch:
        root = args.data or Path(scratch)
        if args.growth:
            growth(
                root, args.units, args.attempts, args.seed, args.growth, args.repeat, args.against
            )
            return
        if args.kinds or args.crossover or args.profile:
            folder = _data(root, args.units[0], args.attempts, args.seed)
            if args.kinds:
                kinds(folder, args.kinds)
            elif args.profile:
                profile(folder, args.profile)
            else:
                crossover(folder, args.crossover, args.repeat)
            return
        trees = [Tree.this(), *([Tree.at(args.against)] if args.against else [])]
        runs: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
        commands: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
        for units in args.units:
            folder = _data(root, units, args.attempts, args.seed)
            for round_ in range(args.repeat):
                for index, mode in enumerate(args.modes):
                    # the trees take turns at going first, so that neither always has the
                    # machine warm (or busy) from the other
                    for tree in trees[:: 1 if (round_ + index) % 2 == 0 else -1]:
                        runs[(tree.name, units, mode)].append(measure(folder, mode, tree))
                for tree in trees[:: 1 if round_ % 2 else -1]:
                    commands[(tree.name, units)].append(command(folder, tree))
    for tree in trees:
        columns = [
            (f"{units:,}u {mode}", runs[(tree.name, units, mode)])
            for units in args.units
            for mode in args.modes
        ]
        title = f" ({tree.name}: {tree.script.parents[1]})" if len(trees) > 1 else ""
        by_units = {units: commands[(tree.name, units)] for units in args.units}
        if title:
            sys.stdout.write(f"{title.strip()}\n")
        sys.stdout.write(_table(columns, args.repeat))
        sys.stdout.write(_commands(by_units, title) + "\n")
    if len(trees) > 1:
        sys.stdout.write(_ratios(runs, commands, args.units))


if __name__ == "__main__":
    main()
