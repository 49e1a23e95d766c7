"""Fixtures of the reference assistant's tests: one plain server and one client per module."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from soev_pipeline.reference import ReferenceServer


@pytest.fixture(scope="module")
def server() -> Iterator[ReferenceServer]:
    with ReferenceServer() as running:
        yield running


@pytest.fixture(scope="module")
def client(server: ReferenceServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as opened:
        yield opened
