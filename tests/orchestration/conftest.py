"""A test that leaves a Dagster instance current fails itself, not a later test.

Dagster's contexts (`build_schedule_context`, `build_sensor_context`) open the instance they are
given; used outside a `with`, they leave its state storage current after the instance is gone,
and the next test that loads definitions fails far from the cause. The modules that open
instances use this fixture (`pytestmark`), which names the test that did it; it collects
garbage after each test, a tenth of a second, so the other modules go without."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from dagster._core.storage.defs_state.base import DefsStateStorage


@pytest.fixture
def no_instance_left_current() -> Iterator[None]:
    yield
    gc.collect()  # an abandoned context closes when collected, restoring the storage it hid
    left = DefsStateStorage.get()
    assert left is None, "the test left a Dagster instance current: open its context with `with`"
