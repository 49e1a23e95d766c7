"""RuntimeBindings and RuntimeProvider as docs/extending.md#a-runtime-provider-package has them."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from soev_pipeline.cli import RuntimeBindings, RuntimeProvider


def test_runtime_bindings_hold_five_services_that_default_to_none() -> None:
    fields = {field.name: field.default for field in dataclasses.fields(RuntimeBindings)}
    assert fields == dict.fromkeys(["arm", "judge", "language_detector", "setup", "tracker"])


def test_the_example_of_the_reference_is_a_runtime_provider() -> None:
    class Runtime:
        @asynccontextmanager
        async def open(self, loaded: Any, *, operation: str) -> AsyncIterator[RuntimeBindings]:
            yield RuntimeBindings()

    assert isinstance(Runtime(), RuntimeProvider)
    assert not isinstance(object(), RuntimeProvider)
