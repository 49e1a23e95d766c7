"""`ChatCompletionsArm`: any OpenAI-compatible `chat/completions` endpoint as the system."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import httpx
from pydantic import JsonValue

from soev_pipeline.core.chars import scrub
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import RetryPolicy, message_text
from soev_pipeline.core.models import Turn
from soev_pipeline.core.project import SystemConfig

from .conversation import Answer, ConversationArm
from .events import parse_usage
from .http import TurnFailed, reading

COMPLETIONS = "chat/completions"


def _malformed(problem: str) -> TurnFailed:
    return TurnFailed("malformed_response", f"the completion {problem}")


def parse_completion(body: bytes) -> Answer:
    """The reply and usage of a non-streamed completion (its first choice).

    The content may be a string or an array of text parts (see `message_text`). A message
    without `content` but with a `refusal` (structured-output refusals) answers with the
    refusal text. A lone surrogate escape in the text is replaced by U+FFFD.

    Raises:
        TurnFailed: `malformed_response` when the body is not a completion.
    """
    try:
        data: Any = json.loads(body)
    except ValueError:
        raise _malformed("is not JSON") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _malformed("has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _malformed("has no message")
    content = message.get("content")
    reply = message.get("refusal") if content is None else message_text(content)
    if not isinstance(reply, str):
        raise _malformed("message has no text content")
    try:
        usage = parse_usage(data.get("usage"))
    except ValueError as exc:
        raise _malformed(f"usage is invalid: {exc}") from None
    return Answer(reply=scrub(reply), usage=usage)


class ChatCompletionsArm(ConversationArm):
    """Runs each conversation of an attempt as a growing `chat/completions` message list.

    Each turn sends the whole conversation so far: every earlier user turn followed by the
    reply it got, then the new user turn. Requests are not streamed; there are no
    citations. The case setup's fields have no place in a completion request and are not
    sent. Retries, timeouts, failures and the concurrency bound are those of every arm.

    Args:
        http: a client from `create_http_client(system)`.
        system: the project's `system` section; `model` is required.
        retry: the backoff of retries.

    Raises:
        ArmError: `system.model` is not set.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        system: SystemConfig,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not system.model:
            raise ArmError("system.model is required for a system of kind 'chat-completions'")
        super().__init__(http, system, retry=retry or RetryPolicy())
        self.model = system.model

    async def converse(
        self, turns: Sequence[str], fields: Mapping[str, JsonValue]
    ) -> tuple[Turn, ...]:
        """Play the turns as one conversation, stopping at the first failed turn."""
        messages: list[dict[str, str]] = []
        played: list[Turn] = []
        for text in turns:
            messages.append({"role": "user", "content": text})
            turn = await self.timed_turn(text, partial(self._exchange, list(messages)))
            played.append(turn)
            if turn.failure is not None:
                break
            messages.append({"role": "assistant", "content": turn.reply or ""})
        return tuple(played)

    async def _exchange(self, messages: list[dict[str, str]], deadline: float) -> Answer:
        body = {"model": self.model, "messages": messages}
        request = self._http.build_request(
            "POST", COMPLETIONS, json=body, headers={"Accept": "application/json"}
        )
        response = await self.send_turn(request, deadline)
        try:
            with reading("response"):
                content = await response.aread()
        finally:
            await response.aclose()
        return parse_completion(content)
