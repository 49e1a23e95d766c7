"""Fuzz: any byte stream ends a turn as an answer or as a recorded failure, nothing else."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soev_pipeline.arms.conversation import Answer
from soev_pipeline.arms.events import ThreadElements, TurnReader
from soev_pipeline.arms.http import TurnFailed

pytestmark = [pytest.mark.e2e, pytest.mark.fuzz]

FRAMES = [
    b'event: tool_output\ndata: {"call_id": "c", '
    b'"elements": [{"id": "e1", "ref": "BWBR1/artikel-1"}]}\n\n',
    b'event: delta\ndata: {"text": "Ja"}\n\n',
    b'event: model_output\ndata: {"content": "Ja.", '
    b'"citations": [{"source": "e1", "status": "resolved"}],'
    b' "usage": {"prompt_tokens": 3, "completion_tokens": 2}}\n\n',
    b'event: status\ndata: {"state": "idle"}\n\n',
    b'event: failure\ndata: {"code": "x", "detail": "y"}\n\n',
    b"event: model_output\ndata: [1, 2]\n\n",
    b": comment\r\n",
    b"data: \xff\xfe\r",
    b'id: 7\nevent: status\ndata: {"state": "running"}\n\n',
]


def _stream(parts: list[bytes], cuts: list[int]) -> list[bytes]:
    body = b"".join(parts)
    chunks, last = [], 0
    for cut in sorted(c % (len(body) + 1) for c in cuts):
        chunks.append(body[last:cut])
        last = cut
    chunks.append(body[last:])
    return chunks


async def _read(chunks: list[bytes]) -> Answer | TurnFailed:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    reader = TurnReader(ThreadElements("ref"), max_frame_bytes=4096)
    try:
        return await reader.read(body())
    except TurnFailed as failed:
        return failed


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.one_of(st.sampled_from(FRAMES), st.binary(max_size=64)), max_size=12),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_any_byte_stream_ends_as_an_answer_or_a_failure(
    parts: list[bytes], cuts: list[int]
) -> None:
    outcome = asyncio.run(_read(_stream(parts, cuts)))
    if isinstance(outcome, TurnFailed):
        assert outcome.failure.code
        json.dumps(outcome.failure.model_dump(mode="json"))
    else:
        assert outcome.reply is None or isinstance(outcome.reply, str)


@settings(max_examples=50, deadline=None)
@given(size=st.integers(4097, 20_000), chunk=st.integers(1, 3000))
def test_an_oversized_frame_is_a_malformed_frame(size: int, chunk: int) -> None:
    body = b"event: model_output\ndata: " + b"x" * size
    chunks = [body[i : i + chunk] for i in range(0, len(body), chunk)]
    outcome = asyncio.run(_read(chunks))
    assert isinstance(outcome, TurnFailed) and outcome.failure.code == "malformed_frame"
