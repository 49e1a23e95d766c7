"""The incremental server-sent events parser."""

from __future__ import annotations

import pytest

from soev_pipeline.arms import ServerSentEvent, SSEError, SSEParser, iter_events

STREAM = (
    b"\xef\xbb\xbf: opening comment\n"
    b'id: 1\nevent: model_output\ndata: {"content": "caf\xc3\xa9"}\n\n'
    b"event: delta\r\ndata: line one\r\ndata:line two\r\n\r\n"
    b"data: bare\r\rid: 7\nevent: status\ndata: {}\n\n"
)
EXPECTED = [
    ServerSentEvent("model_output", '{"content": "café"}', "1"),
    ServerSentEvent("delta", "line one\nline two", "1"),
    ServerSentEvent("message", "bare", "1"),
    ServerSentEvent("status", "{}", "7"),
]


def test_a_whole_stream_at_once() -> None:
    parser = SSEParser()
    assert parser.feed(STREAM) + parser.close() == EXPECTED
    assert not parser.pending


def test_byte_by_byte_gives_each_event_as_soon_as_it_is_complete() -> None:
    parser = SSEParser()
    seen: list[tuple[int, ServerSentEvent]] = []
    for index in range(len(STREAM)):
        seen.extend((index, event) for event in parser.feed(STREAM[index : index + 1]))
    seen.extend((len(STREAM), event) for event in parser.close())
    assert [event for _, event in seen] == EXPECTED
    # the first event is out right at its blank line, long before the stream ends
    assert seen[0][0] == STREAM.index(b"}\n\n") + 2


def test_an_event_without_data_is_not_dispatched_and_resets_the_type() -> None:
    parser = SSEParser()
    assert parser.feed(b"event: status\n\ndata: x\n\n") == [ServerSentEvent("message", "x")]


def test_an_event_cut_off_is_dropped_and_reported_pending() -> None:
    parser = SSEParser()
    assert parser.feed(b'event: status\ndata: {"state": "id') == []
    assert parser.pending
    assert parser.close() == []
    assert parser.pending


def test_a_lone_cr_at_the_very_end_still_ends_the_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r\r") == []
    assert parser.close() == [ServerSentEvent("message", "x")]


def test_an_event_past_the_limit_is_an_error() -> None:
    parser = SSEParser(max_event_chars=10)
    with pytest.raises(SSEError):
        parser.feed(b"data: " + b"x" * 20)


@pytest.mark.anyio
async def test_iter_events_over_chunks(anyio_backend: str) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield STREAM[:30]
        yield STREAM[30:]

    assert [event async for event in iter_events(chunks())] == EXPECTED
