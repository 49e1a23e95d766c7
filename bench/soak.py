"""Soak: runs killed, interrupted, resumed and rescored at random, with the invariants checked.

For a set time (default 30 minutes) against the bundled reference assistant, with failures
on and a bearer token required, this starts runs of a copy of the demo project and, at a
random moment, kills them with SIGKILL, interrupts them with SIGINT or stops them with
SIGTERM (as a CI runner or Kubernetes does), or lets them finish;
resumes them until they are complete; and rescores finished runs two at a time. The runs
folder is a small tmpfs (when the soak may mount one, as root): at random, a run's disk is
filled while it runs, and freed before the resume. At random too, `report --html` and
`--junit` are aimed at a finished run's archive, at project.yaml and at a link into the
archive; each must be refused (exit 2) and change no byte. The runs
reach the assistant through a relay that cuts emoji in half: with `--surrogate-rate`, a
reply's `Volgens` becomes `\ud83ds` on the wire (the same number of bytes, so the HTTP
framing holds), a lone surrogate escape as models emit them. After each step it checks:
- every (case, attempt) pair is archived at most once, and exactly once when a run is done;
- a run that the full disk stopped ends with one line that names the file, and the resume
  loses nothing;
- the report of a finished run counts the attempts its evidence holds;
- no command ends with an internal error, and every evidence line is UTF-8 JSON;
- the token appears nowhere in the project folder (archive and Dagster storage included),
  in any form (as it is, case-changed, hex, URL-encoded, base64), nor in any output, and no
  test case id appears in an output, a report or the Dagster storage.

    python bench/soak.py                    # 30 minutes
    python bench/soak.py --minutes 5 --seed 7

Not part of the tests: it prints a summary and exits 1 when an invariant broke.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import yaml

from soev_pipeline.core.models import Evidence
from soev_pipeline.run.unrun import did_not_run

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
TOKEN = "soak-token-5f0c1e9b2d"
K = 2
WORD, HALF_EMOJI = b"Volgens", b"\\ud83ds"
"""A word of the assistant's replies, and the lone surrogate escape of the same length that
the relay puts in its place."""


@dataclass
class Tally:
    runs: int = 0
    kills: int = 0
    interrupts: int = 0
    terminations: int = 0
    resumes: int = 0
    rescores: int = 0
    refused: int = 0
    pairs: int = 0
    duplicates: int = 0
    leaks: int = 0
    surrogates: int = 0
    replaced: int = 0
    crashes: int = 0
    full_disks: int = 0
    outputs_refused: int = 0
    problems: list[str] = field(default_factory=list)


class HalfEmojiRelay:
    """A TCP relay to the assistant that replaces `WORD` with `HALF_EMOJI` in what comes
    back, at the rate given (a seeded draw per occurrence within one read)."""

    def __init__(self, target: str, rate: float, seed: int) -> None:
        parts = urlsplit(target)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.rate = rate
        self.rng = random.Random(seed)
        self.injected = 0
        self.url = ""
        self._loop = asyncio.new_event_loop()

    def start(self) -> str:
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            server = self._loop.run_until_complete(
                asyncio.start_server(self._relay, "127.0.0.1", 0)
            )
            self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=serve, name="relay", daemon=True).start()
        ready.wait(10)
        return self.url

    async def _relay(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        try:
            upstream, to_upstream = await asyncio.open_connection(self.host, self.port)
        except OSError:
            to_client.close()
            return
        await asyncio.gather(
            self._pipe(client, to_upstream, mangle=False),
            self._pipe(upstream, to_client, mangle=True),
            return_exceptions=True,
        )

    async def _pipe(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, mangle: bool
    ) -> None:
        try:
            while chunk := await source.read(65536):
                if mangle and WORD in chunk:
                    parts = chunk.split(WORD)
                    joined = [parts[0]]
                    for part in parts[1:]:
                        cut = self.rng.random() < self.rate
                        self.injected += cut
                        joined += [HALF_EMOJI if cut else WORD, part]
                    chunk = b"".join(joined)
                sink.write(chunk)
                await sink.drain()
        except ConnectionError:
            pass
        finally:
            sink.close()


def _forms(secret: str) -> list[bytes]:
    """The byte forms of `secret` that the storage scan looks for: as it is, in upper and
    lower case, hex, URL-encoded and base64 (alone, and as `Basic` credentials)."""
    data = secret.encode()
    found = [data, data.upper(), data.lower(), data.hex().encode()]
    found += [quote(secret, safe="").encode(), base64.b64encode(data).rstrip(b"=")]
    for user in (b"u:", b"ab:", b"abc:"):  # the characters that only the secret decides
        encoded = base64.b64encode(user + data)
        found.append(encoded[(8 * len(user) + 5) // 6 : 8 * (len(user) + len(data)) // 6])
    return found


def _tmpfs(folder: Path, megabytes: int = 256) -> bool:
    """Mount a tmpfs of `megabytes` on `folder` (as root); whether it is mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "soev_pipeline", *args]


def _test_ids(project: Path) -> set[str]:
    ids = set()
    for path in project.glob("suites/**/*.yaml"):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        ids |= {case["id"] for case in raw.get("cases", []) if case.get("split") == "test"}
    return ids


def _pairs(run: Path) -> tuple[Counter[tuple[str, int]], int, int]:
    """How often each pair is archived as having run; the complete lines that are not
    UTF-8 JSON (only a last line cut by a kill may be broken); the replies that hold a
    replaced surrogate.

    A pair whose attempt did not run (a 5xx, no connection) is archived again when it is run
    once more, and its last line counts (docs/runs.md): only lines of attempts that ran can
    be duplicates, so those are the ones counted. A pair with only lines that did not run
    counts once.
    """
    counts: Counter[tuple[str, int]] = Counter()
    unrun: set[tuple[str, int]] = set()
    broken = replaced = 0
    path = run / "evidence.jsonl"
    if not path.exists():
        return counts, broken, replaced
    with path.open("rb") as lines:
        for line in lines:
            if not line.endswith(b"\n"):
                continue
            try:
                raw = json.loads(line.decode("utf-8"))
            except ValueError:
                broken += 1
                continue
            pair = (raw["case_id"], raw["attempt"])
            if did_not_run(Evidence.model_validate(raw)) is None:
                counts[pair] += 1
            else:
                unrun.add(pair)
            replaced += "\ufffd" in (raw.get("reply") or "")
    for pair in unrun - set(counts):
        counts[pair] = 1
    return counts, broken, replaced


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
        self.disk = _tmpfs(self.project / "runs")
        self.full_disk_rate = 0.15

    def close(self) -> None:
        if self.disk:
            subprocess.run(["umount", str(self.project / "runs")], check=False)

    def _fill(self) -> Path:
        """Fill the runs' tmpfs to the last byte; the file to delete to free it."""
        filler = self.project / "runs" / "filler"
        with filler.open("wb") as file:
            try:
                while True:
                    file.write(b"\0" * (1 << 20))
                    file.flush()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        return filler

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
        if "internal error" in text or "Traceback" in text:
            self._problem(f"{what}: an internal error: {text.strip().splitlines()[-1]}")
            self.tally.crashes += 1
            tail = "\n".join(text.strip().splitlines()[-40:]).replace(TOKEN, "<token>")
            print(f"  its output, last lines:\n{tail}", file=sys.stderr)
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
        if self.disk and self.rng.random() < self.full_disk_rate:
            time.sleep(self.rng.uniform(0.3, 6.0))
            filler = self._fill()
            out, err = process.communicate(timeout=600)
            filler.unlink()
            self._check_output(out + err, run_id)
            if process.returncode == 1:
                self.tally.full_disks += 1
                if "No space left on device" not in err or len(err.strip().splitlines()) != 1:
                    self._problem(f"{run_id}: a full disk said: {err.strip()[-300:]}")
            elif process.returncode != 0:
                self._problem(f"{run_id}: on a full disk ended with {process.returncode}")
            self._check_run(run_id, complete=process.returncode == 0)
            if process.returncode == 0:
                self.done.append(run_id)
                return
            if not (self.project / "runs" / run_id / "manifest.json").exists():
                return
            process = self._start("run", "--resume", run_id)
            self.tally.resumes += 1
        while True:
            fate = self.rng.random()
            if fate < 0.75:
                time.sleep(self.rng.uniform(0.3, 8.0))
            if process.poll() is None and fate < 0.35:
                process.send_signal(signal.SIGKILL)
                self.tally.kills += 1
            elif process.poll() is None and fate < 0.55:
                process.send_signal(signal.SIGINT)
                self.tally.interrupts += 1
            elif process.poll() is None and fate < 0.75:
                process.send_signal(signal.SIGTERM)
                self.tally.terminations += 1
            status = self._finish(process, run_id)
            if status not in (0, -signal.SIGKILL, 130, 143, 1):
                self._problem(f"{run_id}: ended with status {status}")
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

    def outputs_at_the_archive(self) -> None:
        """`report --html`/`--junit` aimed at the archive, the project, a link: refused
        with exit 2, and not one byte of the run or the project changed."""
        if not self.done:
            return
        run_id = self.rng.choice(self.done)
        run = self.project / "runs" / run_id
        link = self.project.parent / "link-into-the-archive.html"
        link.unlink(missing_ok=True)
        link.symlink_to(run / "evidence.jsonl")
        scoring = sorted(run.glob("scorings/*/report.json"))[-1]
        targets = [run / "evidence.jsonl", run / "manifest.json", scoring, run / "new.html"]
        targets += [self.project / "project.yaml", link, scoring.parent / "report.html"]
        target = self.rng.choice(targets)
        option = self.rng.choice(["--html", "--junit"])
        before = self._digests(run)
        status = self._finish(self._start("report", run_id, option, str(target)), run_id)
        after = self._digests(run)
        if status != 2 or after != before:
            self._problem(f"{run_id}: report {option} {target.name} ended {status}, changed files")
        else:
            self.tally.outputs_refused += 1

    def _digests(self, run: Path) -> dict[Path, str]:
        files = [path for path in run.rglob("*") if path.is_file()]
        files.append(self.project / "project.yaml")
        return {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}

    def _check_run(self, run_id: str, *, complete: bool) -> None:
        run = self.project / "runs" / run_id
        pairs, broken, replaced = _pairs(run)
        self.tally.pairs += len(pairs)
        if broken:
            self._problem(f"{run_id}: {broken} complete evidence lines are not UTF-8 JSON")
        if complete:
            self.tally.replaced += replaced
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
        """The token, in any form, nowhere under the project; test case ids nowhere in
        Dagster's storage."""
        forms = _forms(TOKEN)
        for path in self.project.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            if any(form in data for form in forms):
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
    options.add_argument(
        "--surrogate-rate", type=float, default=0.2, help="share of replies cut by the relay"
    )
    options.add_argument(
        "--full-disk-rate", type=float, default=0.15, help="share of runs whose disk fills up"
    )
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
            relay = HalfEmojiRelay(reference.stdout.readline().strip(), args.surrogate_rate, 1)
            soak = Soak(Path(folder), relay.start(), rng)
            soak.full_disk_rate = args.full_disk_rate
            started = time.monotonic()
            while time.monotonic() - started < args.minutes * 60:
                fate = rng.random()
                if soak.done and fate < 0.3:
                    soak.rescore_twice()
                elif soak.done and fate < 0.4:
                    soak.outputs_at_the_archive()
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
            if "soak" in locals():
                soak.close()
            reference.terminate()
            reference.wait(timeout=10)
    t = soak.tally
    minutes = (time.monotonic() - started) / 60
    print(f"minutes            {minutes:.1f}")
    print(f"runs               {t.runs} ({len(soak.done)} finished)")
    print(f"kills (SIGKILL)    {t.kills}")
    print(f"interrupts (^C)    {t.interrupts}")
    print(f"stops (SIGTERM)    {t.terminations}")
    print(f"resumes            {t.resumes}")
    print(f"rescores           {t.rescores} ({t.refused} refused: run in use)")
    print(f"pairs checked      {t.pairs}")
    print(f"duplicates         {t.duplicates}")
    print(f"half emoji sent    {relay.injected} ({t.replaced} in finished runs' replies)")
    shown = f"{t.full_disks}" if soak.disk else "not tried (cannot mount a tmpfs)"
    print(f"full disks         {shown}")
    print(f"outputs refused    {t.outputs_refused} (aimed at the archive, the project, a link)")
    print(f"internal errors    {t.crashes}")
    print(f"leaks              {t.leaks}")
    print(f"problems           {len(t.problems)}")
    for problem in t.problems:
        print(f"  {problem}")
    return 1 if t.problems else 0


if __name__ == "__main__":
    sys.exit(main())
