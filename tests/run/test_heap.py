"""frozen_heap and collector_paused: nested and concurrent uses share one freeze, one pause."""

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


class _SwitchedGc:
    """Stands in for `gc`: an on/off switch with a log of its changes."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.calls: list[str] = []

    def isenabled(self) -> bool:
        return self.enabled

    def disable(self) -> None:
        self.enabled = False
        self.calls.append("disable")

    def enable(self) -> None:
        self.enabled = True
        self.calls.append("enable")


def test_the_collector_is_on_again_when_the_outermost_pause_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    switched = _SwitchedGc()
    monkeypatch.setattr(heap, "gc", switched)
    monkeypatch.setattr(heap, "_paused", 0)
    with heap.collector_paused():
        assert not switched.enabled
        with heap.collector_paused():
            pass
        assert not switched.enabled  # the inner pause did not end the outer
    assert switched.enabled and switched.calls == ["disable", "enable"]


def test_a_collector_that_was_off_stays_off(monkeypatch: pytest.MonkeyPatch) -> None:
    switched = _SwitchedGc(enabled=False)
    monkeypatch.setattr(heap, "gc", switched)
    monkeypatch.setattr(heap, "_paused", 0)
    with pytest.raises(RuntimeError), heap.collector_paused():
        raise RuntimeError("boom")
    assert not switched.enabled and "enable" not in switched.calls


def test_an_exception_inside_ends_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    switched = _SwitchedGc()
    monkeypatch.setattr(heap, "gc", switched)
    monkeypatch.setattr(heap, "_paused", 0)
    with pytest.raises(RuntimeError), heap.collector_paused():
        raise RuntimeError("boom")
    assert switched.enabled and switched.calls == ["disable", "enable"]


class _HeapGc(_SwitchedGc, _CountingGc):
    """Both: a switch and a count of freezes."""

    def __init__(self) -> None:
        _SwitchedGc.__init__(self)


def test_inside_a_frozen_heap_the_pause_ends_by_freezing_what_it_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    both = _HeapGc()
    monkeypatch.setattr(heap, "gc", both)
    monkeypatch.setattr(heap, "_depth", 0)
    monkeypatch.setattr(heap, "_paused", 0)
    with heap.frozen_heap():
        with heap.collector_paused():
            assert both.calls == ["freeze", "disable"]
        assert both.calls == ["freeze", "disable", "freeze", "enable"]
    assert both.calls[-1] == "unfreeze"  # the frozen heap's end unfreezes it all
    with heap.collector_paused():
        pass
    assert both.calls[-2:] == ["disable", "enable"]  # outside one, nothing is frozen
