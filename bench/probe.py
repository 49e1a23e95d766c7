"""The cost of probing the judge: `soev-evals probe-judge --items 50` on the demo.

Runs the demo's suites against the bundled reference assistant (which is also the demo's
rule-based judge) in a copy of the demo, empties the judge cache, then probes the judge
twice: the first time every probe is asked of the judge, the second time its cache
answers. Prints the items, the judge calls, the answers from the cache and the seconds of
each (the whole command: starting Python and loading the project included).

    python bench/probe.py
    python bench/probe.py --items 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50, help="items per criterion (default 50)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "scripts"))
    from reference import reference_assistant

    soev_evals = Path(sys.executable).with_name("soev-evals")
    with tempfile.TemporaryDirectory() as folder:
        demo = Path(folder) / "demo"
        ignored = shutil.ignore_patterns("runs", ".soev", "report.html")
        shutil.copytree(ROOT / "examples" / "demo", demo, ignore=ignored)
        project = str(demo / "project.yaml")
        with reference_assistant() as url:
            env = {**os.environ, "SOEV_DEMO_URL": url, "DAGSTER_HOME": str(Path(folder) / "dh")}
            run = [str(soev_evals), "run", "--project", project, "--run-id", "r1"]
            subprocess.run(run, env=env, check=True, capture_output=True)
            for cache in (demo / ".soev").glob("judge-cache.sqlite*"):
                cache.unlink()  # the run filled it with the originals: probe from nothing
            command = [str(soev_evals), "probe-judge", "--json", "--items", str(args.items)]
            command += ["--project", project]
            print(f"soev-evals probe-judge --items {args.items} on the demo")
            for label in ("first run (the judge is asked)", "second run (its cache answers)"):
                started = time.perf_counter()
                done = subprocess.run(command, env=env, check=True, capture_output=True)
                seconds = time.perf_counter() - started
                found = json.loads(done.stdout)
                probed = sum(
                    figures["items"] + figures["judge_errors"]
                    for criterion in found["criteria"].values()
                    for figures in criterion["probes"].values()
                )
                print(
                    f"  {label}: {len(found['criteria'])} criteria, {probed} probed items, "
                    f"{found['judge_calls']} judge calls, {found['cache_hits']} from the cache, "
                    f"{seconds:.2f} s"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
