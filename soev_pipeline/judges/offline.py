"""The model of an offline judge: it has no endpoint, so only the judge cache answers."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from soev_pipeline.core.errors import JudgeError

OFFLINE_MESSAGE = "judge unavailable offline; no cached answer for this request"


class OfflineLLM:
    """A `JudgeLLM` that never calls a model, for `rescore --offline`.

    Give it to an `LLMJudge` with a cache: the judge answers every request it asked before
    from the cache, and each other request fails closed with a `JudgeError`. It carries the
    model name of the configured judge, because the model is part of every cache key.
    """

    def __init__(self, model: str, *, context_window: int | None = None) -> None:
        self.model = model
        self.context_window = context_window

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        """Refuse: an offline judge has no model to ask.

        Raises:
            JudgeError: always.
        """
        raise JudgeError(OFFLINE_MESSAGE)
