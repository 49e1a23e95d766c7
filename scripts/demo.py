"""`make demo`: run the demo project against the reference assistant and print the report.

Starts the bundled reference assistant on a free 127.0.0.1 port (it also answers as the
demo's rule-based judge), runs `soev-evals run --project examples/demo/project.yaml`
against it, writes the run's HTML report to examples/demo/report.html, prints the
`soev-evals view` command that opens every run of the demo in a browser, and ends with
the judge's calibration on the demo's labels (`soev-evals calibrate --run RUN`) and its
probes (`soev-evals probe-judge --run RUN`), before it stops the assistant again.
Everything runs offline, on 127.0.0.1.
Extra arguments go to `soev-evals run`, e.g. `python scripts/demo.py --k 3`; a
`--runs-dir` among them goes to every command after it too, so that they read that run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import reference_assistant

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "examples" / "demo" / "project.yaml"
HTML = ROOT / "examples" / "demo" / "report.html"


def _shown(path: Path) -> str:
    """`path` as the user, in the repository's root, types it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _runs_dir(argv: list[str]) -> list[str]:
    """`--runs-dir DIR` as `argv` (the arguments for `soev-evals run`) gives it, else nothing."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--runs-dir")
    given = parser.parse_known_args(argv)[0].runs_dir
    return ["--runs-dir", given] if given else []


def _latest_run(runs_dir: list[str]) -> str | None:
    from soev_pipeline.project import ProjectPaths, read_project
    from soev_pipeline.run.run_attempts import latest_run

    paths = ProjectPaths.of(PROJECT, runs_dir[1] if runs_dir else None)
    run = latest_run(paths.runs, read_project(PROJECT).name)
    return None if run is None else run.run_id


def _look(soev_evals: Path, run_id: str, runs_dir: list[str]) -> None:
    """Write the run's HTML report and say how to look at every run."""
    command = [str(soev_evals), "report", run_id, "--project", str(PROJECT), *runs_dir]
    command += ["--html", str(HTML)]
    if subprocess.call(command, cwd=ROOT, stdout=subprocess.DEVNULL) == 0:
        print(f"\nthe HTML report of run {run_id}: {_shown(HTML)}")
    view = [_shown(soev_evals), "view", "--project", _shown(PROJECT), *runs_dir]
    print("look at the runs, case by case, in your browser:\n  " + " ".join(view))


def _calibrate(soev_evals: Path, run_id: str, env: dict[str, str], runs_dir: list[str]) -> int:
    """Print how the rule-based judge agrees with the demo's labels, and the run's judged
    rates corrected for what they find."""
    print(
        "\nhow far can the judge be trusted? its verdicts against the lawyers' labels "
        f"({_shown(PROJECT.parent / 'labels')}):\n",
        flush=True,
    )
    command = [str(soev_evals), "calibrate", "--run", run_id, "--project", str(PROJECT), *runs_dir]
    return subprocess.call(command, env=env, cwd=ROOT)


def _probe(soev_evals: Path, run_id: str, env: dict[str, str], runs_dir: list[str]) -> int:
    """Print what moves the rule-based judge that should not: the same replies padded,
    addressed to the grader, laid out otherwise, with their options reordered."""
    print("\nis the judge fooled? the same replies with one change each:\n", flush=True)
    command = [str(soev_evals), "probe-judge", "--run", run_id, "--project", str(PROJECT)]
    command += runs_dir
    return subprocess.call(command, env=env, cwd=ROOT)


def main() -> int:
    soev_evals = Path(sys.executable).with_name("soev-evals")
    runs_dir = _runs_dir(sys.argv[1:])
    with reference_assistant() as url:
        print(f"reference assistant at {url}", file=sys.stderr, flush=True)
        env = {**os.environ, "SOEV_DEMO_URL": url}
        command = [str(soev_evals), "run", "--project", str(PROJECT), *sys.argv[1:]]
        status = subprocess.call(command, env=env, cwd=ROOT)
        run_id = _latest_run(runs_dir) if status == 0 else None
        if run_id is not None:
            _look(soev_evals, run_id, runs_dir)
            status = _calibrate(soev_evals, run_id, env, runs_dir) or _probe(
                soev_evals, run_id, env, runs_dir
            )
    return status


if __name__ == "__main__":
    sys.exit(main())
