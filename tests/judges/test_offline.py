"""An offline judge answers from the cache alone and fails closed for everything else."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.ports import JudgeRequest, JudgeResult
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.judges import OFFLINE_MESSAGE, JudgeLLM, OfflineLLM, open_judge
from tests.support.chat_completions import FakeChatCompletions

NUGGET = ("support", "partial_support", "not_support")


def nugget_request(nugget: str) -> JudgeRequest:
    return JudgeRequest(
        task="nuggets.coverage",
        inputs={"question": ["Hoe lang?"], "reply": "Zes weken.", "nugget": nugget},
        allowed_labels=NUGGET,
    )


def config(url: str, **fields: Any) -> JudgeConfig:
    return JudgeConfig.model_validate({"base_url": url, "model": "judge-model"} | fields)


def test_offline_answers_from_the_cache_and_fails_for_the_rest(
    server: FakeChatCompletions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    monkeypatch.setenv("JUDGE_KEY", "k")
    online = config(server.url, api_key_env="JUDGE_KEY")

    async def fill() -> JudgeResult:
        async with open_judge(online, cache_path=cache) as judge:
            return await judge.judge(nugget_request("De termijn is zes weken."))

    asked = asyncio.run(fill())
    monkeypatch.delenv("JUDGE_KEY")

    async def offline() -> tuple[JudgeResult, BaseException | JudgeResult, dict[str, object]]:
        async with open_judge(online, cache_path=cache, offline=True) as judge:
            known = await judge.judge(nugget_request("De termijn is zes weken."))
            try:
                unknown: BaseException | JudgeResult = await judge.judge(
                    nugget_request("De termijn begint na de bekendmaking.")
                )
            except JudgeError as exc:
                unknown = exc
            return known, unknown, judge.stats.as_dict()

    known, unknown, stats = asyncio.run(offline())

    assert server.calls == 1
    assert known.cached and known.label == asked.label
    assert isinstance(unknown, JudgeError)
    assert str(unknown) == OFFLINE_MESSAGE
    assert stats == {"requests": 2, "calls": 0, "cache_hits": 1, "failures": 1}


@pytest.mark.parametrize(("fields", "file"), [({}, None), ({"cache": False}, "c.sqlite")])
def test_offline_without_a_cache_is_refused(
    tmp_path: Path, fields: dict[str, Any], file: str | None
) -> None:
    cache = None if file is None else tmp_path / "state" / file

    async def main() -> None:
        settings = config("http://127.0.0.1:9/v1/", **fields)
        async with open_judge(settings, cache_path=cache, offline=True):
            raise AssertionError("an offline judge without a cache must not open")

    with pytest.raises(JudgeError, match="offline judge needs the judge cache"):
        asyncio.run(main())
    assert not (tmp_path / "state").exists()


def test_the_offline_model_never_answers() -> None:
    llm = OfflineLLM("judge-model", context_window=1000)

    with pytest.raises(JudgeError, match="judge unavailable offline"):
        asyncio.run(llm.complete(system="s", user="u", schema={}))
    assert (llm.model, llm.context_window) == ("judge-model", 1000)
    assert isinstance(llm, JudgeLLM)
