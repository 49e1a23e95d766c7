"""The incremental server-sent events parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_lone_cr_at_the_end_of_a_chunk_ends_the_line_at_once() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r\r") == [ServerSentEvent("message", "x")]
    assert parser.close() == []


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r") == [ServerSentEvent("message", "x")]
    assert parser.feed(b"\ndata: y\n\n") == [ServerSentEvent("message", "y")]


def test_a_line_split_over_many_chunks_is_joined() -> None:
    parser = SSEParser()
    body = b"event: model_output\ndata: " + b"ab" * 500 + b"\n\n"
    events = [
        event for start in range(0, len(body), 7) for event in parser.feed(body[start : start + 7])
    ]
    assert events == [ServerSentEvent("model_output", "ab" * 500)]


def test_a_frame_past_the_limit_fails_as_soon_as_it_arrives() -> None:
    parser = SSEParser(max_frame_bytes=4096)
    parser.feed(b"data: ")
    for _ in range(3):
        parser.feed(b"x" * 1024)
    with pytest.raises(SSEError, match="larger than 4096 bytes"):
        parser.feed(b"x" * 1024)


def test_the_limit_counts_utf8_bytes_across_data_lines() -> None:
    parser = SSEParser(max_frame_bytes=100)
    parser.feed(("data: " + "é" * 30 + "\n").encode())  # 61 bytes
    with pytest.raises(SSEError):
        parser.feed(("data: " + "é" * 30 + "\n").encode())


@pytest.mark.anyio
async def test_iter_events_over_chunks(anyio_backend: str) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield STREAM[:30]
        yield STREAM[30:]

    assert [event async for event in iter_events(chunks())] == EXPECTED


PIECES = [b"data: a", b"data:b", b"event: e", b"id: 3", b": c", b"\n", b"\r", b"\r\n", b"\xc3\xa9"]


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=40),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_any_chunking_gives_the_events_of_the_whole_stream(
    pieces: list[bytes], cuts: list[int]
) -> None:
    """Chunks with a CR and chunks without one take different paths; each way, and across
    CRLFs that chunks split, the events are those of the stream read at once."""
    stream = b"".join(pieces)
    whole = SSEParser()
    expected = whole.feed(stream) + whole.close()
    parser, events, last = SSEParser(), [], 0
    for cut in [*sorted({cut % (len(stream) + 1) for cut in cuts}), len(stream)]:
        events += parser.feed(stream[last:cut])
        last = cut
    assert events + parser.close() == expected
    assert parser.pending == whole.pending
