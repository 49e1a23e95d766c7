"""docs/extending.md as steps to follow: each marked code block, and what its mark says to do.

A mark is an HTML comment on the line before a code block: `<!-- guide: append PATH -->`
(add the block at the end of an existing file), `<!-- guide: create PATH -->` (a new file)
or `<!-- guide: run -->` (a shell command), PATH from the root of the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "extending.md"
MARK = "<!-- guide:"
_STEP = re.compile(
    r"^<!-- guide: (?P<action>append|create|run)(?: (?P<target>\S+))? -->\n"
    r"```(?P<language>\w*)\n(?P<code>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Step:
    action: Literal["append", "create", "run"]
    target: str
    """The file, from the root of the checkout; "" for a command."""
    language: str
    code: str


def steps(guide: Path = GUIDE) -> list[Step]:
    """The steps of `guide`, in its order.

    Raises:
        ValueError: a mark is not right before a code block, or a file step names no file.
    """
    text = guide.read_text(encoding="utf-8")
    found = [
        Step(match["action"], match["target"] or "", match["language"], match["code"])
        for match in _STEP.finditer(text)
    ]
    if len(found) != len(re.findall(f"^{MARK}", text, flags=re.MULTILINE)):
        raise ValueError(f"{guide}: a {MARK!r} mark is not on the line before a code block")
    for step in found:
        if (step.action == "run") == bool(step.target):
            raise ValueError(f"{guide}: a {step.action} mark must name a file, a run mark none")
    return found


def block(target: str) -> str:
    """The code that the guide writes into `target`."""
    (code,) = [step.code for step in steps() if step.target == target]
    return code


def write(step: Step, checkout: Path) -> None:
    """Write a file step into `checkout` as a reader would: a block appended to a file ends
    it, two blank lines after what was there."""
    path = checkout / step.target
    if step.action == "append":
        assert path.is_file(), f"the guide appends to {step.target}, which does not exist"
        text = path.read_text(encoding="utf-8").rstrip("\n")
        path.write_text(f"{text}\n\n\n{step.code}", encoding="utf-8")
    else:
        assert not path.exists(), f"the guide creates {step.target}, which exists already"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(step.code, encoding="utf-8")


def install(package: Path, site: Path) -> None:
    """`pip install package`, into the folder `site` rather than the environment (put it on
    the path to use it): built by its own build backend, offline, without its dependencies,
    which the environment has."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(site),
            str(package),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"pip install {package.name} failed:\n{done.stdout}{done.stderr}"
