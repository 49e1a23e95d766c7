"""frozen_heap: nested and concurrent uses share one freeze."""

from __future__ import annotations

import pytest

from soev_pipeline.run import heap


class _CountingGc:
    """Stands in for `gc` in the module: counts freezes and unfreezes, so the test does not
    depend on the process's own freeze count, which another test's lingering thread (or a
    library) may hold."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def freeze(self) -> None:
        self.calls.append("freeze")

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")


def test_the_heap_is_unfrozen_when_the_outermost_use_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingGc()
    monkeypatch.setattr(heap, "gc", counting)
    monkeypatch.setattr(heap, "_depth", 0)
    with heap.frozen_heap():
        assert counting.calls == ["freeze"]
        with heap.frozen_heap():
            assert counting.calls == ["freeze"]
        assert counting.calls == ["freeze"]  # the inner use did not unfreeze the outer
    assert counting.calls == ["freeze", "unfreeze"]


def test_an_exception_inside_still_unfreezes(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingGc()
    monkeypatch.setattr(heap, "gc", counting)
    monkeypatch.setattr(heap, "_depth", 0)
    with pytest.raises(RuntimeError), heap.frozen_heap():
        raise RuntimeError("boom")
    assert counting.calls == ["freeze", "unfreeze"]
