"""Reading one turn of a soev thread from its events: reply, citations, usage, the end.

A frame's data is either the event's payload itself or the durable-event envelope
`{type, position, ..., payload}`; both are accepted. Only the event types that decide the
turn are decoded: `tool_output` and `attached` (the elements a citation can name),
`model_output`, `status`, `error`, `failure` and `cancelled`. Other types (`delta`,
`opened`, `input`, ...) are skipped unread, so a malformed one cannot fail the turn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from soev_pipeline.core.models import Usage

from .conversation import Answer
from .http import TurnFailed, failure_code, reading
from .sse import MAX_FRAME_BYTES, ServerSentEvent, SSEError, SSEParser, iter_events

DECODED = frozenset(
    {"tool_output", "attached", "model_output", "status", "error", "failure", "cancelled"}
)
TURN_ENDS = frozenset({"idle", "waiting"})
_COUNTS = ("prompt_tokens", "completion_tokens")


def _malformed(event: str, position: str | None, problem: str) -> TurnFailed:
    where = f"event {event!r}" + (f" (id {position})" if position is not None else "")
    return TurnFailed("malformed_frame", f"{where}: {problem}")


@dataclass
class ThreadElements:
    """The elements that the thread's tool outputs gave so far, by id: what citations name.

    `units` maps an element id to the value of its `source_field`, or None when the element
    has no such text value (a citation of it cannot be resolved).
    """

    source_field: str
    units: dict[str, str | None] = field(default_factory=dict)

    def add(self, element: Any) -> bool:
        """Index one element; False when it is not an object with an id."""
        if not isinstance(element, dict) or not isinstance(element.get("id"), str | int):
            return False
        unit = element.get(self.source_field)
        self.units[str(element["id"])] = unit if isinstance(unit, str) and unit else None
        return True

    def resolve(self, citations: Any) -> tuple[str, ...] | None:
        """The cited units of resolved citations, in order, once each; None if malformed.

        A citation that is not `resolved`, or names an element that no earlier tool output
        gave (or one without a unit), is left out.
        """
        if citations is None:
            return ()
        if not isinstance(citations, list):
            return None
        units: dict[str, None] = {}
        for citation in citations:
            if not isinstance(citation, dict):
                return None
            if citation.get("status") != "resolved":
                continue
            source = citation.get("source")
            unit = self.units.get(str(source)) if isinstance(source, str | int) else None
            if unit is not None:
                units.setdefault(unit)
        return tuple(units)


def parse_usage(value: Any) -> Usage | None:
    """Token usage `{prompt_tokens, completion_tokens, ...}`; None when absent.

    Raises:
        ValueError: the value is not an object with two non-negative integer counts.
    """
    if value is None:
        return None
    counts = [value.get(name) for name in _COUNTS] if isinstance(value, dict) else [None]
    if not all(type(count) is int and count >= 0 for count in counts):
        raise ValueError("usage needs counts prompt_tokens and completion_tokens")
    return Usage(prompt_tokens=counts[0], completion_tokens=counts[1])


@dataclass
class TurnReader:
    """Follows the events of one turn until its `status` says the turn is over."""

    elements: ThreadElements
    max_frame_bytes: int = MAX_FRAME_BYTES
    reply: str | None = None
    citations: tuple[str, ...] = ()
    usage: Usage | None = None

    def decode(self, event: ServerSentEvent) -> tuple[str, dict[str, Any]] | None:
        """The type and payload of an event that matters, None for one to skip.

        Raises:
            TurnFailed: `malformed_frame` for data that is not a JSON object.
        """
        kind = event.event
        if kind != "message" and kind not in DECODED:
            return None
        try:
            data = json.loads(event.data)
        except ValueError:
            raise _malformed(kind, event.id, "its data is not JSON") from None
        if not isinstance(data, dict):
            raise _malformed(kind, event.id, "its data is not a JSON object")
        if isinstance(data.get("payload"), dict) and isinstance(data.get("type"), str):
            if kind == "message":
                kind = data["type"]
            data = data["payload"]
        if kind not in DECODED:
            return None
        return kind, data

    def handle(self, event: ServerSentEvent) -> bool:
        """Take one event; True when it ends the turn.

        Raises:
            TurnFailed: the event reports a failure, or lacks a field it needs.
        """
        decoded = self.decode(event)
        if decoded is None:
            return False
        kind, payload = decoded
        if kind in ("tool_output", "attached"):
            elements = payload.get("elements")
            if elements is None:
                return False
            if not isinstance(elements, list) or not all(map(self.elements.add, elements)):
                raise _malformed(kind, event.id, "elements must be objects with an id")
        elif kind == "model_output":
            self._model_output(payload, event)
        elif kind == "status":
            state = payload.get("state")
            if not isinstance(state, str):
                raise _malformed(kind, event.id, "it has no state")
            if state == "orphaned":
                raise TurnFailed("orphaned", "the system reports the thread as orphaned")
            return state in TURN_ENDS
        elif kind in ("error", "failure"):
            code, detail = payload.get("code"), payload.get("detail")
            raise TurnFailed(
                failure_code(code, kind),
                f"{kind} event: {detail}" if isinstance(detail, str) and detail else "",
            )
        elif kind == "cancelled":
            raise TurnFailed("cancelled", "the system cancelled the turn")
        return False

    def _model_output(self, payload: dict[str, Any], event: ServerSentEvent) -> None:
        if "content" not in payload:
            raise _malformed("model_output", event.id, "it has no content")
        content = payload["content"]
        if content is not None and not isinstance(content, str):
            raise _malformed("model_output", event.id, "its content is not text")
        citations = self.elements.resolve(payload.get("citations"))
        if citations is None:
            raise _malformed("model_output", event.id, "citations must be a list of objects")
        try:
            usage = parse_usage(payload.get("usage"))
        except ValueError as exc:
            raise _malformed("model_output", event.id, str(exc)) from None
        self.reply = content or ""
        self.citations = citations
        if usage is not None:
            self.usage = usage if self.usage is None else _add(self.usage, usage)

    async def read(self, chunks: AsyncIterable[bytes]) -> Answer:
        """Read the turn from the body's chunks, acting on each event as it arrives.

        Raises:
            TurnFailed: the turn failed (see `handle`), or the stream ended without `status`.
        """
        parser = SSEParser(max_frame_bytes=self.max_frame_bytes)
        try:
            with reading("stream"):
                async with aclosing(iter_events(chunks, parser)) as events:
                    async for event in events:
                        if self.handle(event):
                            return Answer(self.reply, self.citations, self.usage)
        except SSEError as exc:
            raise TurnFailed("malformed_frame", str(exc)) from exc
        cut = " in the middle of a frame" if parser.pending else ""
        raise TurnFailed("stream_ended", f"the stream ended{cut} without a status event")


def _add(first: Usage, second: Usage) -> Usage:
    return Usage(
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        completion_tokens=first.completion_tokens + second.completion_tokens,
    )
