"""Build the judge of a project from its `judge:` section, for the length of one command."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.http import USER_AGENT, client_timeout
from soev_pipeline.core.project import JudgeConfig, expand_env

from .cache import JudgeCache
from .chat_completions import ChatCompletionsLLM
from .llm import LLMJudge
from .offline import OfflineLLM
from .prompts import load_prompts


def judge_headers(config: JudgeConfig) -> dict[str, str]:
    """Return the request headers of the judge: user agent, `headers`, and the bearer token.

    A header value may hold `${VAR}` (or `${VAR:-default}`), expanded from the environment;
    the bearer token comes from the variable that `api_key_env` names. Secrets are read
    only here, so they never sit in a project file.

    Raises:
        JudgeError: a variable that the configuration names is not set or is empty; the
            message names the variable, never a value.
    """
    headers = {"User-Agent": USER_AGENT}
    for header, value in config.headers.items():
        try:
            headers[header] = expand_env(value)
        except ValueError as exc:
            raise JudgeError(f"judge header {header!r}: {exc}") from None
    if config.api_key_env is not None:
        key = os.environ.get(config.api_key_env)
        if not key:
            raise JudgeError(
                f"judge.api_key_env names the environment variable {config.api_key_env}, "
                "which is not set"
            )
        headers["Authorization"] = f"Bearer {key}"
    return headers


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
    if offline and (not config.cache or cache_path is None):
        raise JudgeError("an offline judge needs the judge cache, but the cache is off")
    headers = {} if offline else judge_headers(config)
    cache = JudgeCache(cache_path) if config.cache and cache_path is not None else None
    try:
        if offline:
            llm = OfflineLLM(config.model, context_window=config.context_window)
            yield LLMJudge(llm, texts, cache=cache, repeats=config.repeats)
            return
        async with httpx.AsyncClient(
            base_url=config.url,
            headers=headers,
            timeout=client_timeout(config.timeout_s),
            follow_redirects=False,
        ) as client:
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
