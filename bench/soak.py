"""Soak: runs killed, interrupted, resumed and rescored at random, with the invariants checked.

For a set time (default 30 minutes) against the bundled reference assistant, with failures
on and a bearer token required, this starts runs of a copy of the demo project and, at a
random moment, kills them with SIGKILL, interrupts them with SIGINT or lets them finish;
resumes them until they are complete; and rescores finished runs two at a time. After each
step it checks:
- every (case, attempt) pair is archived at most once, and exactly once when a run is done;
- the report of a finished run counts the attempts its evidence holds;
- the token appears nowhere in the project folder (archive and Dagster storage included)
  nor in any output, and no test case id appears in an output, a report or the Dagster
  storage.

    python bench/soak.py                    # 30 minutes
    python bench/soak.py --minutes 5 --seed 7

Not part of the tests: it prints a summary and exits 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
TOKEN = "soak-token-5f0c1e9b2d"
K = 2


@dataclass
class Tally:
    runs: int = 0
    kills: int = 0
    interrupts: int = 0
    resumes: int = 0
    rescores: int = 0
    refused: int = 0
    pairs: int = 0
    duplicates: int = 0
    leaks: int = 0
    problems: list[str] = field(default_factory=list)


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "soev_pipeline", *args]


def _test_ids(project: Path) -> set[str]:
    ids = set()
    for path in project.glob("suites/**/*.yaml"):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        ids |= {case["id"] for case in raw.get("cases", []) if case.get("split") == "test"}
    return ids


def _pairs(run: Path) -> Counter[tuple[str, int]]:
    counts: Counter[tuple[str, int]] = Counter()
    path = run / "evidence.jsonl"
    if not path.exists():
        return counts
    with path.open("rb") as lines:
        for line in lines:
            if not line.endswith(b"\n"):
                continue
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            counts[(raw["case_id"], raw["attempt"])] += 1
    return counts


class Soak:
    def __init__(self, workdir: Path, url: str, rng: random.Random) -> None:
        self.project = workdir / "project"
        shutil.copytree(DEMO, self.project, ignore=shutil.ignore_patterns("runs", ".soev"))
        config = self.project / "project.yaml"
        text = (
            config.read_text(encoding="utf-8")
            .replace("  agent: wetwijzer\n", "  agent: wetwijzer\n  api_key_env: SOAK_TOKEN\n")
            .replace(  # the judge the assistant serves asks for the token too
                "  model: soev-rule-judge\n",
                "  model: soev-rule-judge\n  api_key_env: SOAK_TOKEN\n",
            )
        )
        config.write_text(text, encoding="utf-8")
        self.env = {**os.environ, "SOEV_DEMO_URL": url, "SOAK_TOKEN": TOKEN}
        self.env.pop("DAGSTER_HOME", None)
        self.rng = rng
        self.tally = Tally()
        self.test_ids = _test_ids(self.project)
        self.cases = sum(
            len(yaml.safe_load(p.read_text(encoding="utf-8")).get("cases", []))
            for p in self.project.glob("suites/**/*.yaml")
        )
        self.done: list[str] = []

    def _start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            _command(*args, "--project", str(self.project / "project.yaml")),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _finish(self, process: subprocess.Popen[str], what: str) -> int:
        out, err = process.communicate(timeout=600)
        self._check_output(out + err, what)
        return process.returncode

    def _check_output(self, text: str, what: str) -> None:
        if TOKEN in text:
            self._problem(f"{what}: the token is in its output")
            self.tally.leaks += 1
        named = [case_id for case_id in self.test_ids if case_id in text]
        if named:
            self._problem(f"{what}: test case ids in its output: {len(named)}")
            self.tally.leaks += 1

    def _problem(self, text: str) -> None:
        self.tally.problems.append(text)
        print(f"  PROBLEM: {text}", file=sys.stderr)

    def run_once(self) -> None:
        run_id = f"soak-{self.tally.runs:04d}"
        self.tally.runs += 1
        process = self._start("run", "--run-id", run_id, "--k", str(K))
        while True:
            fate = self.rng.random()
            if fate < 0.75:
                time.sleep(self.rng.uniform(0.3, 8.0))
            if process.poll() is None and fate < 0.45:
                process.send_signal(signal.SIGKILL)
                self.tally.kills += 1
            elif process.poll() is None and fate < 0.75:
                process.send_signal(signal.SIGINT)
                self.tally.interrupts += 1
            status = self._finish(process, run_id)
            self._check_run(run_id, complete=status == 0)
            if status == 0:
                self.done.append(run_id)
                return
            if not (self.project / "runs" / run_id / "manifest.json").exists():
                return  # stopped before it was archived: nothing to resume
            process = self._start("run", "--resume", run_id)
            self.tally.resumes += 1

    def rescore_twice(self) -> None:
        if not self.done:
            return
        run_id = self.rng.choice(self.done)
        first, second = self._start("rescore", run_id), self._start("rescore", run_id)
        statuses = [self._finish(first, run_id), self._finish(second, run_id)]
        self.tally.rescores += 2
        self.tally.refused += statuses.count(1)
        if sorted(statuses) not in ([0, 0], [0, 1]):
            self._problem(f"{run_id}: two rescores ended with {statuses}")
        self._check_run(run_id, complete=True)

    def _check_run(self, run_id: str, *, complete: bool) -> None:
        run = self.project / "runs" / run_id
        pairs = _pairs(run)
        self.tally.pairs += len(pairs)
        twice = sum(1 for count in pairs.values() if count > 1)
        if twice:
            self.tally.duplicates += twice
            self._problem(f"{run_id}: {twice} pairs archived more than once")
        if not complete:
            return
        if len(pairs) != self.cases * K:
            self._problem(f"{run_id}: {len(pairs)} pairs archived, {self.cases * K} expected")
        reports = sorted(run.glob("scorings/*/report.json"))
        if not reports:
            self._problem(f"{run_id}: finished without a report")
            return
        report = json.loads(reports[-1].read_text(encoding="utf-8"))
        if report["overall"]["attempts"] != sum(pairs.values()):
            self._problem(f"{run_id}: the report counts {report['overall']['attempts']} attempts")
        text = reports[-1].read_text(encoding="utf-8")
        if any(case_id in text for case_id in self.test_ids):
            self._problem(f"{run_id}: a test case id is in its report")
            self.tally.leaks += 1

    def check_storage(self) -> None:
        """The token nowhere under the project; test case ids nowhere in Dagster's storage."""
        for path in self.project.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            if TOKEN.encode() in data:
                self._problem(f"the token is in {path.relative_to(self.project)}")
                self.tally.leaks += 1
            if ".soev/dagster" in str(path) and any(i.encode() in data for i in self.test_ids):
                self._problem(f"a test case id is in {path.relative_to(self.project)}")
                self.tally.leaks += 1


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--minutes", type=float, default=30.0)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--failure-rate", default="0.1")
    options.add_argument("--latency-ms", default="150")
    args = options.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="soev-soak-") as folder:
        reference = subprocess.Popen(
            _command(
                "serve-reference",
                "--port",
                "0",
                "--latency-ms",
                args.latency_ms,
                "--failure-rate",
                args.failure_rate,
                "--seed",
                str(args.seed),
                "--token-env",
                "SOAK_TOKEN",
            ),
            env={**os.environ, "SOAK_TOKEN": TOKEN},
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reference.stdout is not None
            url = reference.stdout.readline().strip()
            soak = Soak(Path(folder), url, rng)
            started = time.monotonic()
            while time.monotonic() - started < args.minutes * 60:
                if soak.done and rng.random() < 0.3:
                    soak.rescore_twice()
                else:
                    soak.run_once()
                t = soak.tally
                elapsed = (time.monotonic() - started) / 60
                print(
                    f"{elapsed:5.1f} min: {t.runs} runs, {t.kills} kills, "
                    f"{t.interrupts} interrupts, {t.resumes} resumes, {t.rescores} rescores",
                    file=sys.stderr,
                )
            soak.check_storage()
        finally:
            reference.terminate()
            reference.wait(timeout=10)
    t = soak.tally
    minutes = (time.monotonic() - started) / 60
    print(f"minutes            {minutes:.1f}")
    print(f"runs               {t.runs} ({len(soak.done)} finished)")
    print(f"kills (SIGKILL)    {t.kills}")
    print(f"interrupts (^C)    {t.interrupts}")
    print(f"resumes            {t.resumes}")
    print(f"rescores           {t.rescores} ({t.refused} refused: run in use)")
    print(f"pairs checked      {t.pairs}")
    print(f"duplicates         {t.duplicates}")
    print(f"leaks              {t.leaks}")
    print(f"problems           {len(t.problems)}")
    for problem in t.problems:
        print(f"  {problem}")
    return 1 if t.problems else 0


if __name__ == "__main__":
    sys.exit(main())
