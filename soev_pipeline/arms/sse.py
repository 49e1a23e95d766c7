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
MAX_FRAME_BYTES = 8 * 1024 * 1024
"""The default size limit of one frame: its lines and data, in UTF-8 bytes."""


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

    def __init__(self, *, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._max = max_frame_bytes
        self._partial: list[str] = []
        self._partial_bytes = 0
        self._after_cr = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self._last_id: str | None = None

    @property
    def pending(self) -> bool:
        """Whether part of an event has arrived without the blank line that ends it."""
        return bool(self._partial or self._data or self._event)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Take the next chunk of the body and return the events it completes, in order.

        Each chunk is searched once, from where the last one ended: the cost is linear in
        the size of the stream, however the server cuts it into chunks.

        Raises:
            SSEError: one frame is larger than the size limit; raised as soon as the part
                that has arrived is.
        """
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        position = 0
        if self._after_cr and text:
            self._after_cr = False
            if text[0] == "\n":
                position = 1  # the LF of a CRLF that the previous chunk split
        if "\r" in text:
            lines, position = self._lines(text, position)
        else:  # the usual stream: one split instead of a search a line
            lines = text[position:].split("\n")
            position = len(text) - len(lines.pop())
        events: list[ServerSentEvent] = []
        for line in lines:
            if self._partial:
                line = "".join(self._partial) + line
                self._partial, self._partial_bytes = [], 0
            event = self._line(line)
            if event is not None:
                events.append(event)
        rest = text[position:]
        if rest:
            self._partial.append(rest)
            self._partial_bytes += len(rest.encode("utf-8"))
        if self._partial_bytes + self._size > self._max:
            raise SSEError(f"a frame is larger than {self._max} bytes")
        return events

    def _lines(self, text: str, position: int) -> tuple[list[str], int]:
        """The whole lines of `text` from `position` on, ended by CRLF, LF or CR, and where
        the rest begins."""
        lines: list[str] = []
        while (match := _END_OF_LINE.search(text, position)) is not None:
            lines.append(text[position : match.start()])
            position = match.end()
            if match.group() == "\r" and position == len(text):
                self._after_cr = True
        return lines, position

    def close(self) -> list[ServerSentEvent]:
        """End the stream. A cut event is dropped (see `pending`), never dispatched."""
        rest = self._decoder.decode(b"", final=True)
        if rest:
            self._partial.append(rest)
        return []

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
            self._size += len(value.encode("utf-8")) + 1
            if self._size > self._max:
                raise SSEError(f"a frame is larger than {self._max} bytes")
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
