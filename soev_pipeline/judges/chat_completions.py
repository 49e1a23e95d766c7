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
from soev_pipeline.core.http import RetryPolicy, RetryRules, message_text, send_with_retries

logger = logging.getLogger(__name__)

RETRY_RULES = RetryRules(
    status=lambda status: status == 429 or status >= 500,
    errors=(httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError),
    give_up_on_long_wait=True,
)
"""A judge call only reads, so every timeout, network error, 429 and 5xx may be asked
again; a server that asks for a wait past the cap is not waited for."""


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
        try:
            sent = await send_with_retries(
                lambda: self._client.post("chat/completions", json=body),
                rules=RETRY_RULES,
                policy=self._retry,
                max_retries=self._max_retries,
                slots=self._semaphore,
                on_retry=self._log_retry,
            )
        except httpx.HTTPError as exc:
            raise JudgeError(f"judge call failed: {type(exc).__name__}") from None
        last = sent.last
        if isinstance(last, httpx.Response):
            if last.is_success:
                return last
            await last.aclose()
            reason = f"HTTP {last.status_code}"
        else:
            reason = type(last).__name__
        if sent.refused_wait_s is not None:
            raise JudgeError(
                f"judge call failed: {reason}; the server asks to wait {sent.refused_wait_s:.0f} s"
            )
        after = _after(sent.retries) if sent.retryable else ""
        raise JudgeError(f"judge call failed: {reason}{after}")

    def _log_retry(self, reason: str, retry: int, delay: float) -> None:
        logger.info(
            "judge call failed (%s); retry %d of %d in %.1f s",
            reason,
            retry,
            self._max_retries,
            delay,
        )


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
    content = (
        message_text(message.get("content"), other_parts=True)
        if isinstance(message, dict)
        else None
    )
    if content is not None:
        return content
    if isinstance(message, dict) and message.get("refusal"):
        raise JudgeError("judge call failed: the model refused to answer")
    raise JudgeError("judge call failed: the response message has no text content")
