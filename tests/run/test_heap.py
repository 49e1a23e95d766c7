"""frozen_heap: nested and concurrent uses share one freeze."""

from __future__ import annotations

import gc

from soev_pipeline.run.heap import frozen_heap


def test_the_heap_is_unfrozen_when_the_outermost_use_ends() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        # > 0, not >= frozen: a thread of an earlier test (a test server's) may free
        # frozen objects meanwhile; an unfreeze empties the permanent generation
        with frozen_heap():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0  # the inner use did not unfreeze the outer
    assert gc.get_freeze_count() == 0
