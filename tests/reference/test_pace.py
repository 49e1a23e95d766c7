"""A turn of the reference server takes its latency, not its latency plus each pause's
lateness: its pauses wait until moments counted from the turn's start (`threads._Pace`)."""

from __future__ import annotations

import asyncio

import pytest

from soev_pipeline.reference import threads
from soev_pipeline.reference.assistant import Assistant

LATE_S = 0.004
"""How late each sleep wakes, as on a loop that is busy."""


def _turn_seconds(monkeypatch: pytest.MonkeyPatch, latency_s: float) -> tuple[float, int]:
    now = [0.0]
    sleeps: list[float] = []

    async def late_sleep(delay: float) -> None:
        sleeps.append(delay)
        now[0] += delay + LATE_S

    monkeypatch.setattr(threads, "_clock", lambda: now[0])
    monkeypatch.setattr(threads.asyncio, "sleep", late_sleep)
    service = threads.ThreadService(Assistant(), latency_s=latency_s)
    thread = threads.Thread(id="t1", agent="a", model=None)

    async def read() -> list[bytes]:
        return [
            frame
            async for frame in service._turn(
                thread,
                {"text": "Binnen welke termijn moet ik bezwaar maken?"},
                opening=True,
                fail=False,
            )
        ]

    frames = asyncio.run(read())
    assert frames and thread.state == "idle"
    return now[0], len(sleeps)


def test_a_turn_takes_its_latency_and_one_pause_s_lateness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elapsed, pauses = _turn_seconds(monkeypatch, 0.05)
    assert pauses >= 3  # the latency is spread over the stream
    # each pause's lateness is taken out of the next one: only the last one shows
    assert elapsed == pytest.approx(0.05 + LATE_S)


def test_no_latency_no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _turn_seconds(monkeypatch, 0.0) == (0.0, 0)
