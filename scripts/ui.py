"""`make ui`: open a project (default: the demo) in the Dagster UI.

Starts the reference assistant, so that runs launched from the UI have a system to talk
to, and a viewer (`soev-evals view`) of each project's runs, whose run pages the reports'
metadata link to (`$SOEV_VIEW_URL`, or `$SOEV_VIEW_URL_<NAME>` for each project of
`$SOEV_PROJECTS`); points `DAGSTER_HOME` at the instance the CLI uses for the project (so
runs started with `soev-evals run` show here); and runs `dg dev`, which serves the code
location that `[tool.dg]` in pyproject.toml names or, with `$SOEV_PROJECTS` set, a
workspace file (written into the instance folder) that serves every listed project as a
code location of its own. Arguments go to `dg dev` (`python scripts/ui.py -p 3001`).

Ctrl-C, SIGTERM and SIGHUP stop everything it started within seconds. `dg dev` runs in a
process group of its own, so that this script alone decides the order: it interrupts
`dg dev`, which stops its webserver, daemon and code servers; ends what is left of that
group (a code server still shutting down, a run's processes); then stops the viewers and
the assistant.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, suppress
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import port_is_free, reference_assistant, viewer

from soev_pipeline.orchestration.instance import ensure_instance
from soev_pipeline.orchestration.location import workspace_for
from soev_pipeline.project import ProjectPaths
from soev_pipeline.project.listing import listed_projects, view_url_env

ROOT = Path(__file__).resolve().parents[1]
DEMO_PORT = 8765
VIEW_PORT = 8766
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 30.0
"""How long `dg dev` may take to stop its services before what is left of them is ended."""


def main() -> int:
    # A handler of our own also means that the children start with the default handling of
    # these signals, even where this process inherited SIGINT ignored (a background job).
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_requested)
    try:
        return _serve()
    except KeyboardInterrupt:
        return 0


def _stop_requested(signum: int, frame: FrameType | None) -> None:
    """Interrupt at the first stop signal, and ignore the ones after it: each step of
    stopping has a bound."""
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    raise KeyboardInterrupt


def _serve() -> int:
    project = Path(os.environ.get("SOEV_PROJECT") or ROOT / "examples" / "demo" / "project.yaml")
    paths = ProjectPaths.of(project, os.environ.get("SOEV_RUNS_DIR") or None)
    home = ensure_instance(paths.dagster_home)
    dg = Path(sys.executable).with_name("dg")
    if not dg.exists():
        raise SystemExit(f"{dg} is missing: run `make install`")
    command = [str(dg), "dev"]
    listed = listed_projects()
    if listed:
        workspace = home / "workspace.yaml"
        workspace.write_text(workspace_for(listed), encoding="utf-8")
        command += ["-w", str(workspace)]
    command += sys.argv[1:]
    # The demo project's default address, so that `soev-evals run` from another shell
    # reaches the same assistant without SOEV_DEMO_URL; a free port when it is taken.
    port = DEMO_PORT if port_is_free(DEMO_PORT) else 0
    with ExitStack() as stack:
        url = stack.enter_context(reference_assistant(port=port))
        env = {
            **os.environ,
            "SOEV_DEMO_URL": url,
            "SOEV_PROJECT": str(paths.project_file),
            "DAGSTER_HOME": str(home),
        }
        if sys.prefix != sys.base_prefix:  # as if activated: dg warns about another one
            env["VIRTUAL_ENV"] = sys.prefix
        # one viewer per project, each at the address its code location links to
        views: dict[str | None, str] = {}
        if listed:
            for item in listed:
                runs = ProjectPaths.of(item.project_file, item.runs_dir).runs
                views[item.name] = stack.enter_context(viewer(item.project_file, runs, env))
        else:
            view_port = VIEW_PORT if port_is_free(VIEW_PORT) else 0
            views[None] = stack.enter_context(
                viewer(paths.project_file, paths.runs, env, view_port)
            )
        for name, view in views.items():
            env[view_url_env(name)] = view
        shown = [
            f"viewer of {name} at {view}" if name else f"viewer at {view}"
            for name, view in views.items()
        ]
        print("; ".join([f"reference assistant at {url}", *shown]), file=sys.stderr)
        print(f"Dagster instance in {home}", file=sys.stderr)
        if port != DEMO_PORT:
            print(
                f"port {DEMO_PORT} is taken: for soev-evals in another shell, "
                f"export SOEV_DEMO_URL={url} DAGSTER_HOME={home}",
                file=sys.stderr,
            )
        return _dg_dev(command, env)


def _dg_dev(command: list[str], env: dict[str, str]) -> int:
    """Run `dg dev` in a process group of its own until it ends or a stop signal comes; then
    end that group."""
    process = subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True)
    try:
        # Waited for in short turns: a stop signal that the kernel hands to another thread
        # of this process (the assistant's, a viewer's) interrupts no blocking wait of the
        # main thread, whose handler then runs only when the wait returns.
        while True:
            with suppress(subprocess.TimeoutExpired):
                return process.wait(timeout=0.2)
    except KeyboardInterrupt:
        print("stopping the Dagster UI, the viewers and the assistant", file=sys.stderr)
        # what Ctrl-C in a terminal does to a foreground group: dg dev and its services stop
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            print(f"dg dev did not stop in {GRACE_S:.0f} s: ending it", file=sys.stderr)
        return 0
    finally:
        _end_group(process.pid)


def _end_group(group: int) -> None:
    """SIGTERM what is left of process group `group`; SIGKILL what is left 5 s later."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if not _group_runs(group):
            return
        with suppress(ProcessLookupError):
            os.killpg(group, signum)
        deadline = time.monotonic() + 5
        while _group_runs(group) and time.monotonic() < deadline:
            time.sleep(0.1)


def _group_runs(group: int) -> bool:
    """Whether a process of group `group` still runs. Read from /proc where there is one, so
    that an ended process nobody has reaped (an init process that does not reap leaves
    them) does not count."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rpartition(")")[2].split()
            if int(fields[2]) == group and fields[0] not in ("Z", "X"):
                return True
    return False


if __name__ == "__main__":
    sys.exit(main())
