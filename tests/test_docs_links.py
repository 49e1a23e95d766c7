"""The repository explains itself: no file cites a contract kept outside it, and every
pointer from one file to a page of docs/ lands on a file and a heading that exist.

A pointer is a relative Markdown link (`[the archive](runs.md#the-archive)`) or a mention of
a docs file by its path from the repository's root, the way docstrings, comments and the
README cite them (a `docs/` path ending in `.md` or `.json`, with an optional `#anchor`).
Anchors are GitHub's: the heading's text, lower-cased, without punctuation, spaces as `-`.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {".git", ".venv", ".bench", "__pycache__", "node_modules", "runs", ".soev"}

OUTSIDE = re.compile(r"\bS[P]EC\b|\.\./shared\b")
"""A citation of the contract that lived outside the repository (written so that this line
does not match itself), or a path that leaves the repository for it."""

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
MENTION = re.compile(r"(?<![\w/.-])(docs/[\w./-]+?\.(?:md|json))(?:#([\w-]+))?")


def _walk() -> Iterator[Path]:
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [name for name in dirs if name not in SKIPPED_DIRS]
        for name in files:
            yield Path(folder, name)


@cache
def tracked_texts() -> dict[Path, str]:
    """Every file that git tracks (every file of the tree without git), with its text;
    binary files are left out."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
        ).stdout
        paths = [REPO / name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = list(_walk())
    texts = {}
    for path in paths:
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data:
            texts[path] = data.decode("utf-8", errors="replace")
    return texts


def outside_fences(text: str) -> Iterator[tuple[int, str]]:
    """The numbered lines of a Markdown text that are not in a fenced code block."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lower-cased, without
    punctuation but `-` and `_`, each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors of a Markdown page's headings; a repeated one gets `-1`, `-2`, ...
    as GitHub numbers them."""
    seen: Counter[str] = Counter()
    found = set()
    for _, line in outside_fences(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            anchor = slug(match.group(2))
            found.add(f"{anchor}-{seen[anchor]}" if seen[anchor] else anchor)
            seen[anchor] += 1
    return frozenset(found)


def where(path: Path, number: int) -> str:
    return f"{path.relative_to(REPO)}:{number}"


def broken(source: str, target: Path, anchor: str | None) -> str | None:
    """Why a pointer from `source` to `target` (and `#anchor`) does not resolve, or None."""
    if not target.exists():
        return f"{source}: no file {os.path.relpath(target, REPO)}"
    if anchor is None:
        return None
    if target.suffix != ".md":
        return f"{source}: #{anchor} points into {target.name}, which has no headings"
    if anchor not in anchors(target):
        return f"{source}: {target.relative_to(REPO)} has no heading #{anchor}"
    return None


def markdown_links() -> Iterator[tuple[str, Path, str | None]]:
    """Every relative link of every Markdown file: where, the file it names, its anchor."""
    for path, text in tracked_texts().items():
        if path.suffix != ".md":
            continue
        for number, line in outside_fences(text):
            for target in LINK.findall(line):
                if SCHEME.match(target):
                    continue
                file, _, anchor = target.partition("#")
                resolved = (path.parent / file).resolve() if file else path
                yield where(path, number), resolved, anchor or None


def docs_mentions() -> Iterator[tuple[str, Path, str | None]]:
    """Every mention of a docs file by its path from the root, in any tracked file."""
    for path, text in tracked_texts().items():
        if path.suffix == ".json":
            text = text.replace("\\n", "\n")  # a JSON string's line breaks
        for number, line in enumerate(text.splitlines(), 1):
            for file, anchor in MENTION.findall(line):
                yield where(path, number), REPO / file, anchor or None


def test_no_file_cites_a_contract_kept_outside_the_repository() -> None:
    found = [
        f"{where(path, number)}: {line.strip()}"
        for path, text in tracked_texts().items()
        for number, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not found, "cite the page of docs/ that holds it instead:\n" + "\n".join(found)


def test_every_relative_markdown_link_resolves() -> None:
    links = list(markdown_links())
    assert len(links) > 20, "the links of the docs were not found"
    problems = [why for link in links if (why := broken(*link)) is not None]
    assert not problems, "\n".join(problems)


def test_every_mention_of_a_docs_file_resolves() -> None:
    mentions = list(docs_mentions())
    assert len(mentions) > 20, "the mentions of docs/ were not found"
    problems = [why for mention in mentions if (why := broken(*mention)) is not None]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "Is the judge right? Calibration against human labels",
            "is-the-judge-right-calibration-against-human-labels",
        ),
        ("`soev-evals calibrate`", "soev-evals-calibrate"),
        ("One run: stderr, ci95 and detectable_drop", "one-run-stderr-ci95-and-detectable_drop"),
        ("project.yaml", "projectyaml"),
        ("The judge's counters", "the-judges-counters"),
        (
            "3. Scale-out: the queue, the run launcher and a limit per assistant",
            "3-scale-out-the-queue-the-run-launcher-and-a-limit-per-assistant",
        ),
    ],
)
def test_an_anchor_is_the_one_github_gives_the_heading(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_repeated_heading_is_numbered_and_a_fenced_one_is_no_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Runs\n## The simulation\n```\n# not a heading\n```\n## The simulation\n")
    assert anchors(page) == {"runs", "the-simulation", "the-simulation-1"}
