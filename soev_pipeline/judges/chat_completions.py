"""An adapter for OpenAI-compatible `chat/completions` endpoints: vLLM, Ollama, OpenAI, Azure.

It asks for the answer as structured output (a strict JSON schema), with temperature 0 and a
fixed seed by default, so the same question gets the same answer where the server allows.
It retries what is safe to repeat (network errors, timeouts, 429 and 5xx) with exponential
backoff and jitter, and turns every failure into a one-line `JudgeError` that carries the
status or error type, never the request or the response body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import httpx
from pydantic import JsonValue

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.http import RetryPolicy, retry_after_seconds

logger = logging.getLogger(__name__)

_RETRY_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class ChatCompletionsLLM:
    """A `JudgeLLM` over the `chat/completions` endpoint of an OpenAI-compatible server.

    The client carries the base URL, the headers (authorization included) and the
    timeouts; one client serves every call of a command. `open_judge` builds both from a
    project's `judge:` section.

    Args:
        client: the HTTP client; requests go to `chat/completions` under its base URL.
        model: the model name sent with each request.
        context_window: the model's context window in tokens, or None when unknown.
        temperature: the sampling temperature; None to leave it to the server.
        seed: the sampling seed; None to send none.
        concurrency: how many calls may be in flight at once.
        max_retries: how many times a failed call is retried when retrying is safe.
        backoff_s: the first retry's delay; each further retry doubles it, with jitter.
        max_backoff_s: the longest delay between two retries.
        max_retry_after_s: the longest `Retry-After` that is honoured; a server that asks
            for a longer wait fails the call at once.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        model: str,
        *,
        context_window: int | None = None,
        temperature: float | None = 0.0,
        seed: int | None = 0,
        concurrency: int = 8,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        max_retry_after_s: float = 120.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.context_window = context_window
        self._client = client
        self._temperature = temperature
        self._seed = seed
        self._semaphore = asyncio.Semaphore(concurrency)
        self._max_retries = max_retries
        self._retry = RetryPolicy(
            backoff_s=backoff_s,
            backoff_cap_s=max_backoff_s,
            retry_after_cap_s=max_retry_after_s,
        )

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        """Send one chat request and return the text of the answer.

        Raises:
            JudgeError: the call failed after the allowed retries, the server refused it,
                or the response holds no answer text.
        """
        body: dict[str, JsonValue] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": dict(schema)},
            },
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if self._seed is not None:
            body["seed"] = self._seed
        response = await self._post(body)
        return _content(response)

    async def _post(self, body: dict[str, JsonValue]) -> httpx.Response:
        retries = 0
        while True:
            retry_after: float | None = None
            try:
                async with self._semaphore:
                    response = await self._client.post("chat/completions", json=body)
            except _RETRY_ERRORS as exc:
                reason = type(exc).__name__
            except httpx.HTTPError as exc:
                raise JudgeError(f"judge call failed: {type(exc).__name__}") from None
            else:
                if response.is_success:
                    return response
                reason = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise JudgeError(f"judge call failed: {reason}")
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if retries >= self._max_retries:
                raise JudgeError(f"judge call failed: {reason}{_after(retries)}")
            if retry_after is not None and retry_after > self._retry.retry_after_cap_s:
                raise JudgeError(
                    f"judge call failed: {reason}; the server asks to wait {retry_after:.0f} s"
                )
            delay = self._retry.backoff(retries) if retry_after is None else retry_after
            retries += 1
            logger.info(
                "judge call failed (%s); retry %d of %d in %.1f s",
                reason,
                retries,
                self._max_retries,
                delay,
            )
            await asyncio.sleep(delay)


def _after(retries: int) -> str:
    if retries == 0:
        return ""
    return f" after {retries} {'retry' if retries == 1 else 'retries'}"


def _content(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        raise JudgeError("judge call failed: the response is not JSON") from None
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise JudgeError("judge call failed: the response has no choices[0].message") from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(message, dict) and message.get("refusal"):
        raise JudgeError("judge call failed: the model refused to answer")
    raise JudgeError("judge call failed: the response message has no text content")
