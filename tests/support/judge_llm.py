"""The judge client of the tests: the `JudgeLLM` adapter example of the judges reference, as
written there, which the fake `chat/completions` endpoint (`tests.support.chat_completions`)
answers. A runtime provider of the tests uses it as the reference's provider example does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from soev_pipeline.core.errors import JudgeError


class ExampleJudgeLLM:
    """Asks `chat/completions` of `client` for a JSON answer of the schema, with `model`."""

    context_window = 128_000

    def __init__(self, client: httpx.AsyncClient, model: str) -> None:
        self._client = client
        self._model = model

    async def complete(self, *, system: str, user: str, schema: Mapping[str, Any]) -> str:
        schema_format = {"name": "verdict", "schema": dict(schema)}
        body = {
            "model": self._model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": schema_format},
        }
        try:
            response = await self._client.post("chat/completions", json=body)
            response.raise_for_status()
            content: str = response.json()["choices"][0]["message"]["content"]
            return content
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            raise JudgeError(f"judge call failed: {type(exc).__name__}") from exc
