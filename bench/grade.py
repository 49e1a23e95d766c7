"""Benchmark: grade many attempts with every built-in kind that needs no judge.

Generates, from a seed, a corpus of Dutch-like law units and attempts whose replies quote
the corpus, mention articles and cite units (see `synthetic.py`). It then grades every
attempt with each kind of `builtin_registry()` except the five judge kinds, through
`CriterionRegistry.evaluate`, and prints per corpus size: the time to load the corpus and
to build its indexes, the attempts graded per second, and the peak memory.

Each corpus size runs in its own process, so that its peak memory is its own. Grading
time should not grow with the corpus: the corpus criteria use indexes, never a scan.

    python bench/grade.py                                  # 5,000 and 50,000 units
    python bench/grade.py --units 2000 --attempts 500      # a quick smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from synthetic import MESSAGES, make_attempts, make_cases, make_corpus

from soev_pipeline.core.models import Case, CriterionSpec, Evidence
from soev_pipeline.core.ports import CriterionContext, LanguageDetector
from soev_pipeline.corpus import load_corpus
from soev_pipeline.criteria import CriterionRegistry, builtin_registry

JUDGE_KINDS = frozenset(
    {
        "behaviour.expected",
        "privacy.names",
        "nuggets.coverage",
        "rubric.judge",
        "compare.equivalent",
    }
)
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


class FixedLanguage:
    """A language detector that always answers Dutch: for when no real one is at hand."""

    def detect(self, text: str) -> str:
        return "nl"


def language_detector(fake: bool) -> tuple[LanguageDetector, str]:
    if not fake:
        try:
            from soev_pipeline.judges.language import LangidDetector
        except ImportError:
            pass
        else:
            return LangidDetector(), "LangidDetector"
    return FixedLanguage(), "fixed (always nl)"


Graded = list[tuple[CriterionSpec, BaseModel]]


def criteria(registry: CriterionRegistry) -> tuple[Graded, list[str]]:
    """Every non-judge kind of `registry` with bench parameters; kinds that refuse them."""
    chosen: Graded = []
    skipped: list[str] = []
    for name in registry:
        if name in JUDGE_KINDS:
            continue
        spec = CriterionSpec.model_validate({"kind": name, **PARAMS.get(name, {})})
        try:
            chosen.append((spec, registry.validate(spec)))
        except Exception as exc:
            skipped.append(f"{name} ({exc})")
    return chosen, skipped


async def grade_all(
    registry: CriterionRegistry,
    specs: Graded,
    attempts: list[tuple[Case, Evidence]],
    ctx: CriterionContext,
) -> tuple[dict[str, Counter[str]], dict[str, float]]:
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: dict[str, float] = defaultdict(float)
    for case, evidence in attempts:
        for spec, params in specs:
            began = time.perf_counter()
            verdict = await registry.evaluate(spec, case, evidence, ctx, params)
            seconds[spec.kind] += time.perf_counter() - began
            statuses[spec.kind][verdict.status] += 1
    return statuses, seconds


def run_one(units: int, attempts_count: int, seed: int, fake_language: bool) -> dict[str, Any]:
    """One corpus size, in this process: generate, load, index, grade; return the figures."""
    began = time.perf_counter()
    corpus_units = make_corpus(seed, units)
    text_mb = sum(len(unit.text.encode()) for unit in corpus_units) / 1e6
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for unit in corpus_units:
                record = {
                    "id": unit.id,
                    "text": unit.text,
                    "law": unit.law,
                    "aliases": list(unit.aliases),
                    "article": unit.article,
                }
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        load_began = time.perf_counter()
        corpus = load_corpus(path)
        load_s = time.perf_counter() - load_began
    rng = random.Random(seed + 2)
    cases = make_cases(rng, corpus_units, max(1, min(1000, attempts_count // 4)))
    attempts = make_attempts(seed, corpus_units, cases, attempts_count)
    del corpus_units
    generate_s = time.perf_counter() - began - load_s

    index_began = time.perf_counter()
    corpus.warm()
    index_s = time.perf_counter() - index_began

    registry = builtin_registry()
    specs, skipped = criteria(registry)
    detector, detector_name = language_detector(fake_language)
    ctx = CriterionContext(messages=MESSAGES, corpus=corpus, language_detector=detector)
    grade_began = time.perf_counter()
    statuses, seconds = asyncio.run(grade_all(registry, specs, attempts, ctx))
    grade_s = time.perf_counter() - grade_began
    return {
        "units": units,
        "text_mb": round(text_mb, 1),
        "attempts": attempts_count,
        "kinds": len(specs),
        "skipped": skipped,
        "language_detector": detector_name,
        "generate_s": round(generate_s, 2),
        "load_s": round(load_s, 2),
        "index_s": round(index_s, 2),
        "index_mb": round(corpus.quote_index().nbytes / 1e6, 1),
        "grade_s": round(grade_s, 2),
        "attempts_per_s": round(attempts_count / grade_s) if grade_s else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "statuses": {kind: dict(counts) for kind, counts in sorted(statuses.items())},
        "seconds": {kind: round(value, 2) for kind, value in sorted(seconds.items())},
    }


def _table(results: list[dict[str, Any]]) -> str:
    rows = [
        ("corpus text (MB)", "text_mb"),
        ("load corpus JSONL (s)", "load_s"),
        ("build indexes (s)", "index_s"),
        ("quote index arrays (MB)", "index_mb"),
        ("attempts graded", "attempts"),
        ("kinds per attempt", "kinds"),
        ("grading time (s)", "grade_s"),
        ("attempts per second", "attempts_per_s"),
        ("peak memory, max RSS (MB)", "peak_rss_mb"),
    ]
    header = f"{'':28}" + "".join(f"{result['units']:>14,} units" for result in results)
    lines = [header]
    for label, key in rows:
        lines.append(f"{label:28}" + "".join(f"{result[key]!s:>20}" for result in results))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--attempts", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fake-language", action="store_true", help="use a fixed detector")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = run_one(args.units[0], args.attempts, args.seed, args.fake_language)
        sys.stdout.write(json.dumps(result) + "\n")
        return
    results = []
    for units in args.units:
        command = [sys.executable, __file__, "--one", "--units", str(units)]
        command += ["--attempts", str(args.attempts), "--seed", str(args.seed)]
        command += ["--fake-language"] if args.fake_language else []
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    last = results[-1]
    sys.stdout.write(_table(results) + "\n\n")
    sys.stdout.write(f"language detector: {last['language_detector']}\n")
    if last["skipped"]:
        sys.stdout.write("skipped kinds: " + "; ".join(last["skipped"]) + "\n")
    sizes = "".join(f"{result['units']:>10,} u" for result in results)
    sys.stdout.write(f"\ngrading seconds per kind{sizes}   verdicts ({last['units']:,} units)\n")
    for kind, counts in last["statuses"].items():
        times = "".join(f"{result['seconds'].get(kind, 0):>12.2f}" for result in results)
        shown = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
        sys.stdout.write(f"  {kind:28}{times}   {shown}\n")


if __name__ == "__main__":
    main()
