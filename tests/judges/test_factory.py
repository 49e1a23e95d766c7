"""`open_judge` builds the judge from a project's `judge:` section."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from soev_pipeline import __version__
from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.ports import Judge, JudgeRequest
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.judges import LLMJudge, judge_headers, open_judge
from tests.support.chat_completions import FakeChatCompletions


def config(url: str = "http://127.0.0.1:9/v1/", **fields: Any) -> JudgeConfig:
    return JudgeConfig.model_validate({"base_url": url, "model": "judge-model"} | fields)


def test_the_key_and_expanded_headers_are_sent(
    server: FakeChatCompletions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", "s3cret-token")
    monkeypatch.setenv("JUDGE_TEST_TENANT", "gemeente-x")
    settings = config(
        server.url,
        api_key_env="JUDGE_TEST_KEY",
        headers={"X-Tenant": "${JUDGE_TEST_TENANT}", "X-Team": "evals"},
        context_window=32_000,
        temperature=None,
        seed=7,
    )
    cache = tmp_path / ".soev" / "judge-cache.sqlite"
    request = JudgeRequest(task="privacy.names", inputs={"text": "Hoi"}, allowed_labels=("none",))

    async def main() -> None:
        async with open_judge(settings, cache_path=cache) as judge:
            assert isinstance(judge, Judge)
            assert judge.model == "judge-model"
            result = await judge.judge(request)
            assert result.label == "none"

    asyncio.run(main())

    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer s3cret-token"
    assert headers["x-tenant"] == "gemeente-x"
    assert headers["x-team"] == "evals"
    assert headers["user-agent"] == f"soev-pipeline/{__version__}"
    assert "temperature" not in server.bodies[0]
    assert server.bodies[0]["seed"] == 7
    assert cache.is_file()


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_key_variable_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    else:
        monkeypatch.setenv("JUDGE_TEST_KEY", value)

    with pytest.raises(JudgeError) as caught:
        judge_headers(config(api_key_env="JUDGE_TEST_KEY"))

    assert str(caught.value) == (
        "judge.api_key_env names 'JUDGE_TEST_KEY', but that environment variable is not set"
    )


def test_a_missing_header_variable_names_the_header_and_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", "s3cret-token")
    monkeypatch.delenv("JUDGE_TEST_MISSING", raising=False)
    settings = config(api_key_env="JUDGE_TEST_KEY", headers={"api-key": "${JUDGE_TEST_MISSING}"})

    with pytest.raises(JudgeError) as caught:
        judge_headers(settings)

    assert "'api-key'" in str(caught.value)
    assert "JUDGE_TEST_MISSING" in str(caught.value)
    assert "s3cret-token" not in str(caught.value)


def test_open_judge_fails_before_it_opens_anything(tmp_path: Path) -> None:
    settings = config(api_key_env="JUDGE_TEST_UNSET_KEY")

    async def main() -> None:
        async with open_judge(settings, cache_path=tmp_path / "state" / "c.sqlite"):
            raise AssertionError("must not open")

    with pytest.raises(JudgeError, match="JUDGE_TEST_UNSET_KEY"):
        asyncio.run(main())
    assert not (tmp_path / "state").exists()


def test_open_judge_uses_the_given_prompts_and_repeats(server: FakeChatCompletions) -> None:
    settings = config(server.url, repeats=3)
    request = JudgeRequest(task="custom.task", inputs={}, allowed_labels=("yes", "no"))

    async def main() -> str:
        async with open_judge(
            settings, cache_path=None, prompts={"custom.task": "Say yes."}
        ) as judge:
            assert isinstance(judge, LLMJudge)
            return (await judge.judge(request)).label

    assert asyncio.run(main()) == "yes"
    assert server.calls == 3
    assert server.bodies[0]["messages"][0]["content"] == "Say yes."
