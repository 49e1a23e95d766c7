"""An incremental parser of server-sent events (the `text/event-stream` format).

The soev thread API streams each turn as server-sent events. The arm must act on a frame as
soon as it arrives (a turn ends on its `status` event even when the server keeps the
connection open), so the parser takes the body chunk by chunk, as the network delivers it,
and hands back every event that a chunk completes.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass

_END_OF_LINE = re.compile(r"\r\n|\r|\n")
MAX_EVENT_CHARS = 8 * 1024 * 1024


class SSEError(ValueError):
    """The stream is not a valid event stream (for example an event past the size limit)."""


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event: its type, its data lines joined with newlines, the last event id."""

    event: str
    data: str
    id: str | None = None


class SSEParser:
    """Turns the bytes of an event stream into events, one chunk at a time.

    Follows the WHATWG rules: lines end with CRLF, LF or CR (also when a chunk splits a
    CRLF), `:` starts a comment, a blank line dispatches the event, an event without data
    is not dispatched, and an event that the stream cuts off before its blank line is
    dropped (see `pending`).
    """

    def __init__(self, *, max_event_chars: int = MAX_EVENT_CHARS) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._max = max_event_chars
        self._buffer = ""
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self._last_id: str | None = None

    @property
    def pending(self) -> bool:
        """Whether part of an event has arrived without the blank line that ends it."""
        return bool(self._buffer or self._data or self._event)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Take the next chunk of the body and return the events it completes, in order.

        Raises:
            SSEError: one event (or one unfinished line) is longer than the size limit.
        """
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        buffer = self._buffer + text
        events: list[ServerSentEvent] = []
        start = 0
        while (match := _END_OF_LINE.search(buffer, start)) is not None:
            if match.group() == "\r" and match.end() == len(buffer):
                break  # the chunk may split a CRLF: wait for the next one
            event = self._line(buffer[start : match.start()])
            if event is not None:
                events.append(event)
            start = match.end()
        self._buffer = buffer[start:]
        if len(self._buffer) + self._size > self._max:
            raise SSEError(f"an event is longer than {self._max} characters")
        return events

    def close(self) -> list[ServerSentEvent]:
        """End the stream: a last line that ended in a lone CR still counts, a cut event not."""
        tail = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        events: list[ServerSentEvent] = []
        if tail.endswith("\r"):
            event = self._line(tail[:-1])
            if event is not None:
                events.append(event)
        else:
            self._buffer = tail
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event = self._data, self._event
        self._data, self._event, self._size = [], "", 0
        if not data:
            return None
        return ServerSentEvent(event=event or "message", data="\n".join(data), id=self._last_id)


async def iter_events(
    chunks: AsyncIterable[bytes], parser: SSEParser | None = None
) -> AsyncGenerator[ServerSentEvent, None]:
    """Yield the events of a byte stream as soon as each one is complete.

    Pass your own `parser` to ask it afterwards whether the stream ended mid-event.
    """
    parser = parser or SSEParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
    for event in parser.close():
        yield event
