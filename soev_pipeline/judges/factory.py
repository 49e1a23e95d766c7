"""Build the judge of a project from its `judge:` section, for the length of one command."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.http import create_client, register_config_secrets, request_headers
from soev_pipeline.core.project import JudgeConfig

from .cache import JudgeCache
from .chat_completions import ChatCompletionsLLM
from .llm import LLMJudge
from .offline import OfflineLLM
from .prompts import load_prompts


def judge_headers(config: JudgeConfig) -> dict[str, str]:
    """Return the request headers of the judge: user agent, `headers`, and the bearer token.

    They are `core.http.request_headers` for the `judge:` section, so a header template
    reads the same for the judge as for the system under test.

    Raises:
        JudgeError: a variable that the configuration names is not set (or, for the
            token, is empty); the message names the variable, never a value.
    """
    return request_headers(config, section="judge", error=JudgeError)


@asynccontextmanager
async def open_judge(
    config: JudgeConfig,
    *,
    cache_path: Path | None,
    offline: bool = False,
    prompts: Mapping[str, str] | None = None,
) -> AsyncIterator[LLMJudge]:
    """Open the judge of a command: one HTTP client, the cache, and the `LLMJudge` over them.

    Everything is closed when the block ends. Offline, no client is opened: the judge
    answers from the cache alone, and every other request fails closed.

    Args:
        config: the project's `judge:` section.
        cache_path: the judge cache file, for example `<project>/.soev/judge-cache.sqlite`;
            None, or `judge.cache: false`, to ask the model every time.
        offline: answer only from the cache, as `rescore --offline` does.
        prompts: the prompt of each task; the built-in prompts when None.

    Raises:
        JudgeError: a needed environment variable is not set, or `offline` is asked without
            a cache to answer from.
    """
    texts = load_prompts() if prompts is None else prompts
    register_config_secrets(config)  # offline too: an old cache entry may hold the key
    if offline and (not config.cache or cache_path is None):
        raise JudgeError("an offline judge needs the judge cache, but the cache is off")
    client = None if offline else create_client(config, section="judge", error=JudgeError)
    cache = JudgeCache(cache_path) if config.cache and cache_path is not None else None
    try:
        if client is None:
            llm = OfflineLLM(config.model, context_window=config.context_window)
            yield LLMJudge(llm, texts, cache=cache, repeats=config.repeats)
            return
        async with client:
            adapter = ChatCompletionsLLM(
                client,
                config.model,
                context_window=config.context_window,
                temperature=config.temperature,
                seed=config.seed,
                concurrency=config.concurrency,
                max_retries=config.max_retries,
            )
            yield LLMJudge(adapter, texts, cache=cache, repeats=config.repeats)
    finally:
        if cache is not None:
            cache.close()
