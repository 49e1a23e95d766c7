"""Helpers for talking to the reference server in tests: open a thread, read its frames."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

SSE = {"Accept": "text/event-stream"}
THREADS = "v1/chat/threads"


@dataclass(frozen=True)
class Frame:
    """One server-sent event as it came over the wire."""

    id: int
    event: str
    data: dict[str, Any]


def parse_frames(text: str) -> list[Frame]:
    """Split an event stream into frames; every frame must have id, event and data."""
    frames = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) == {"id", "event", "data"}, block
        frames.append(Frame(int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return frames


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"input": {"text": text}, "agent": "wetwijzer", **extra}


def open_thread(client: httpx.Client, text: str) -> tuple[str, list[Frame]]:
    """Open a thread with `text`; returns its id and the frames of the first turn."""
    response = client.post(THREADS, json=body(text), headers=SSE)
    assert response.status_code == 201, response.text
    return response.headers["x-soev-thread-id"], parse_frames(response.text)


def follow_up(client: httpx.Client, thread_id: str, text: str) -> list[Frame]:
    response = client.post(
        f"{THREADS}/{thread_id}/inputs", json={"input": {"text": text}}, headers=SSE
    )
    assert response.status_code == 200, response.text
    return parse_frames(response.text)


def one(frames: list[Frame], event: str) -> dict[str, Any]:
    """The data of the single frame of type `event`."""
    found = [frame.data for frame in frames if frame.event == event]
    assert len(found) == 1, [frame.event for frame in frames]
    return found[0]


def cited_refs(frames: list[Frame]) -> list[str]:
    """The unit ids the turn's model output cites, through its tool output elements."""
    elements = {
        element["id"]: element["ref"]
        for frame in frames
        if frame.event == "tool_output"
        for element in frame.data["elements"]
    }
    return [elements[citation["source"]] for citation in one(frames, "model_output")["citations"]]
