"""The judge's tests speak to the fake chat/completions endpoint on a real socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chat_completions import FakeChatCompletions


@pytest.fixture
def server() -> Iterator[FakeChatCompletions]:
    with FakeChatCompletions() as fake:
        yield fake
