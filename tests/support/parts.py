"""The real parts some e2e tests need (PostgreSQL, Chromium, Playwright): a test without
them is skipped on a developer's machine and fails under `CI=true`, where `.ci/run` has
installed them, so CI never passes by skipping them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # a closed network refuses Chromium's own background connections, many at a time
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""How the browser tests start Chromium: headless, as root, with no network of its own."""


def need(present: bool, what: str) -> None:
    """Go on when `present`; else skip, or fail under `CI=true`."""
    if present:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}: CI must run this test (.ci/run installs it)")
    pytest.skip(f"{what} (.ci/run installs it)")


def need_chromium() -> None:
    """Debian's Chromium and the Playwright driver that the browser tests drive it with."""
    need(Path(CHROMIUM).exists(), f"Chromium is not installed at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "Playwright is not installed")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium driven by Playwright (`need_chromium` first), closed on the way
    out: the one way the browser tests start it."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()
