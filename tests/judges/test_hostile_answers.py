"""Judge answers that are hard to read: a reasoning block first, text parts, a lone
surrogate, the judge's own key; and a judge cache damaged on disk. None stops a command,
and nothing unreadable or secret is stored."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.ports import JudgeRequest, JudgeResult
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.core.secrets import REDACTED, forget_secrets
from soev_pipeline.judges import open_judge
from soev_pipeline.judges.llm import parse_answer, strip_reasoning
from tests.support.chat_completions import FakeChatCompletions, completion

NAMES = ("none", "name")
KEY = "judge-key-5f1e9c0a77"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    forget_secrets()
    monkeypatch.setenv("JUDGE_KEY", KEY)
    yield
    forget_secrets()


def request(text: str = "Geachte heer Jansen.") -> JudgeRequest:
    return JudgeRequest(task="privacy.names", inputs={"text": text}, allowed_labels=NAMES)


def judge_once(url: str, cache: Path | None, **fields: Any) -> JudgeResult | BaseException:
    config = JudgeConfig.model_validate(
        {"base_url": url, "model": "judge-model", "api_key_env": "JUDGE_KEY"} | fields
    )

    async def main() -> JudgeResult | BaseException:
        async with open_judge(config, cache_path=cache) as judge:
            [result] = await asyncio.gather(judge.judge(request()), return_exceptions=True)
            return result

    return asyncio.run(main())


def stored(cache: Path) -> list[bytes]:
    with sqlite3.connect(cache) as conn:
        conn.text_factory = bytes
        return [row[0] for row in conn.execute("SELECT answer FROM answers")]


class TestReasoningBlocks:
    @pytest.mark.parametrize(
        "text",
        [
            '<think>Noemt "Jansen".\n{"label": "none"}</think>\n{"label": "name", "detail": "d"}',
            '  <THINKING>kort</THINKING>{"label": "name", "detail": "d"}',
            '<reasoning></reasoning>```json\n{"label": "name", "detail": "d"}\n```',
        ],
    )
    def test_a_leading_reasoning_block_is_stripped(self, text: str) -> None:
        assert parse_answer("privacy.names", text, NAMES) == ("name", "d")

    @pytest.mark.parametrize(
        "text",
        [
            '<think>nooit gesloten {"label": "name", "detail": "d"}',
            '{"label": "name", "detail": "d"} <think>achteraf</think>',
            'Eerst dit. <think>x</think>{"label": "name", "detail": "d"}',
            '<think>a</think><think>b</think>{"label": "name", "detail": "d"}',
            '<think>a</thinking>{"label": "name", "detail": "d"}',
        ],
    )
    def test_anything_else_still_fails_closed(self, text: str) -> None:
        with pytest.raises(JudgeError, match="not valid JSON"):
            parse_answer("privacy.names", text, NAMES)

    def test_text_without_a_block_is_left_as_it_is(self) -> None:
        assert strip_reasoning("  <b>vet</b>") == "  <b>vet</b>"

    def test_a_reasoning_model_answers_through_the_adapter(
        self, server: FakeChatCompletions, tmp_path: Path
    ) -> None:
        server.queue(completion('<think>hmm</think>{"label": "name", "detail": "noemt Jansen"}'))
        result = judge_once(server.url, tmp_path / "cache.sqlite")
        assert isinstance(result, JudgeResult) and result.label == "name"
        assert stored(tmp_path / "cache.sqlite") == [b'{"label": "name", "detail": "noemt Jansen"}']


def test_content_as_an_array_of_text_parts_is_read(server: FakeChatCompletions) -> None:
    parts = [
        {"type": "thinking", "thinking": "De tekst noemt een naam."},
        {"type": "text", "text": '{"label": "name", '},
        {"type": "text", "text": '"detail": "Jansen"}'},
    ]
    server.queue(completion(body={"choices": [{"message": {"content": parts}}]}))
    result = judge_once(server.url, None)
    assert isinstance(result, JudgeResult) and (result.label, result.detail) == ("name", "Jansen")


def test_an_answer_with_an_image_and_a_text_part_is_read_from_its_text(
    server: FakeChatCompletions,
) -> None:
    parts = [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "text", "text": '{"label": "none", "detail": "geen naam"}'},
    ]
    server.queue(completion(body={"choices": [{"message": {"content": parts}}]}))
    result = judge_once(server.url, None)
    assert isinstance(result, JudgeResult) and (result.label, result.detail) == (
        "none",
        "geen naam",
    )
    image_only = [parts[0]]
    server.queue(completion(body={"choices": [{"message": {"content": image_only}}]}))
    assert not isinstance(judge_once(server.url, None), JudgeResult)


@pytest.mark.parametrize(
    "content",
    ['{"label": "none", "detail": "half \ud83d"}', '{"label": "none", "detail": "half \\ud83d"}'],
    ids=["surrogate-in-the-body", "surrogate-in-the-answer"],
)
def test_a_lone_surrogate_is_replaced_before_it_is_stored(
    server: FakeChatCompletions, tmp_path: Path, content: str
) -> None:
    """Once as a lone surrogate in the body's JSON, once as an escape in the answer's JSON
    (which every rescore read back from the cache, and crashed on)."""
    cache = tmp_path / "cache.sqlite"
    server.queue(
        completion(body=json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    )
    first = judge_once(server.url, cache)
    again = judge_once(server.url, cache)
    for result in (first, again):
        assert isinstance(result, JudgeResult) and result.detail == "half \ufffd"
    assert again.cached and server.calls == 1
    [answer] = stored(cache)
    assert answer.decode("utf-8") == '{"label": "none", "detail": "half \ufffd"}'


def test_the_judges_key_in_an_answer_reaches_neither_the_cache_nor_the_detail(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    cut = "x" * 150 + KEY  # a detail cut at 160 characters would keep the key's start
    server.queue(completion(json.dumps({"label": "none", "detail": f"{cut} Bearer {KEY}"})))
    result = judge_once(server.url, cache)
    assert isinstance(result, JudgeResult)
    assert KEY not in result.detail and KEY[:8] not in result.detail
    assert result.detail.endswith(f"{REDACTED} Bearer {REDACTED}")
    assert KEY.encode() not in b"".join(stored(cache))
    assert KEY.encode() not in cache.read_bytes()


class TestDamagedCache:
    def test_an_entry_that_is_not_utf8_is_dropped_and_asked_again(
        self, server: FakeChatCompletions, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        cache = tmp_path / "cache.sqlite"
        assert isinstance(judge_once(server.url, cache), JudgeResult)
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE answers SET answer = CAST(X'7bff22' AS TEXT)")
        with caplog.at_level(logging.WARNING):
            result = judge_once(server.url, cache)
        assert isinstance(result, JudgeResult) and not result.cached
        assert server.calls == 2
        [line] = [record.getMessage() for record in caplog.records]
        assert "is not UTF-8 text; dropped" in line
        assert isinstance(judge_once(server.url, cache), JudgeResult)
        assert server.calls == 2  # the new answer replaced the broken one

    def test_an_entry_that_does_not_validate_is_replaced(
        self, server: FakeChatCompletions, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        cache = tmp_path / "cache.sqlite"
        judge_once(server.url, cache)
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE answers SET answer = 'geen json'")
        with caplog.at_level(logging.WARNING):
            assert isinstance(judge_once(server.url, cache), JudgeResult)
        assert ["does not validate; dropped" in r.getMessage() for r in caplog.records] == [True]
        again = judge_once(server.url, cache)
        assert isinstance(again, JudgeResult) and again.cached and server.calls == 2

    def test_a_file_that_is_not_a_database_is_put_aside(
        self, server: FakeChatCompletions, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        cache = tmp_path / "cache.sqlite"
        cache.write_bytes(b"this was never sqlite " * 100)
        with caplog.at_level(logging.WARNING):
            assert isinstance(judge_once(server.url, cache), JudgeResult)
        [aside] = tmp_path.glob("cache.sqlite.broken-*")
        assert aside.read_bytes().startswith(b"this was never sqlite")
        assert "not a SQLite database; put aside" in caplog.records[0].getMessage()
        assert isinstance(judge_once(server.url, cache), JudgeResult) and server.calls == 1
