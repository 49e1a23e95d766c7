"""A module whose tests leave a Dagster instance current fails itself, not a later module.

Dagster's contexts (`build_schedule_context`, `build_sensor_context`) open the instance they are
given; used outside a `with`, they leave its state storage current after the instance is gone,
and the next test that loads definitions fails far from the cause. The modules that open
instances use this fixture (`pytestmark`). It collects garbage once a module, after its
last test (a collection takes a quarter of a second here), and names the module."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from dagster._core.storage.defs_state.base import DefsStateStorage


@pytest.fixture(scope="module")
def no_instance_left_current(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    gc.collect()  # an abandoned context closes when collected, restoring the storage it hid
    left = DefsStateStorage.get()
    assert left is None, (
        f"a test of {request.module.__name__} left a Dagster instance current: "
        "open Dagster's contexts with `with`"
    )
