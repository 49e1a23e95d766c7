"""docs/extending.md, followed as written: in a copy of the repository, every marked block
written into the file its mark names and every marked command run, then the fast tests of
the copy run green, with the guide's kind in the registry and its provider installed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.guide import REPO, Step, install, steps, write

VENV = Path(sys.prefix)
"""The environment of this test run, which the copy's commands and tests use."""
COMMANDS = ("make docs", "pip install ./my-runtime")
"""The commands the guide may ask for, which the test below knows how to run."""


def test_each_step_of_the_guide_can_be_followed() -> None:
    """The marks parse, name files that the guide may append to and commands that the test
    below runs, and the Python blocks compile: the cheap half of following the guide."""
    found = steps()
    assert {step.action for step in found} == {"append", "create", "run"}
    for step in found:
        if step.action == "append":
            assert (REPO / step.target).is_file(), step.target
        if step.action == "run":
            assert step.code.strip() in COMMANDS, step.code
        if step.language == "python":
            compile(step.code, step.target, "exec")


def _copy(checkout: Path) -> None:
    """The files of the repository as they are in its work tree (tracked or not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        source, target = REPO / name, checkout / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())


def _run(command: list[str], checkout: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{output[-6000:]}"
    return output


@pytest.mark.e2e
def test_following_the_guide_keeps_the_fast_tests_green(tmp_path: Path) -> None:
    checkout, site = tmp_path / "soev-pipeline", tmp_path / "site"
    _copy(checkout)
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(site)])
    stamp = VENV / ".installed"  # make must not rebuild the environment of this test run
    commands: dict[str, Callable[[], object]] = {
        "make docs": lambda: _run(
            ["make", "docs", f"VENV={VENV}", "-o", str(stamp)], checkout, env, 300
        ),
        "pip install ./my-runtime": lambda: install(checkout / "my-runtime", site),
    }
    followed: list[Step] = []
    for step in steps(checkout / "docs" / "extending.md"):
        if step.action == "run":
            commands[step.code.strip()]()
        else:
            write(step, checkout)
        followed.append(step)
    assert {step.action for step in followed} == {"append", "create", "run"}

    python = str(VENV / "bin" / "python")
    shown = _run(
        [
            python,
            "-c",
            "from pathlib import Path\n"
            "from soev_pipeline.criteria import builtin_registry\n"
            "from soev_pipeline.runtime import resolve_runtime\n"
            "import soev_pipeline\n"
            "print(soev_pipeline.__file__)\n"
            "print(builtin_registry().get('reply.max_sentences').summary)\n"
            "print(type(resolve_runtime('mine', state=Path('.soev'))).__module__)\n",
        ],
        checkout,
        env,
        60,
    ).splitlines()
    assert shown == [
        str(checkout / "soev_pipeline" / "__init__.py"),  # the copy's package, not this one
        "the reply has at most `max` sentences",
        "my_runtime",
    ]
    assert "| `reply.max_sentences` |" in (checkout / "docs" / "criteria.md").read_text()

    tests = [python, "-m", "pytest", "-m", "not e2e", "-n", "2", "-q", "-p", "no:cacheprovider"]
    assert " passed" in _run(tests, checkout, env, 1800)
    names = [python, "-m", "pytest", "--collect-only", "-q", "tests/criteria/test_reply.py"]
    collected = _run(names, checkout, env, 120)
    assert "test_max_sentences_without_a_reply_is_an_error" in collected
