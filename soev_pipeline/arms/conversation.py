"""What every arm shares: an attempt as conversations that each hold a concurrency slot.

An attempt runs the case's conversation and one conversation per variant, all at once.
Each conversation holds one slot of the arm's semaphore while it runs, so `concurrency`
bounds the conversations in flight across the whole run, whatever the run engine does.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from pydantic import JsonValue

from soev_pipeline.core.http import RetryPolicy
from soev_pipeline.core.models import Case, Evidence, Failure, Turn, Usage, VariantEvidence
from soev_pipeline.core.project import SystemConfig

from .http import TurnFailed, send


@dataclass(frozen=True)
class Answer:
    """What one turn returned: the reply, the ids of the cited units, the token usage."""

    reply: str | None
    citations: tuple[str, ...] = ()
    usage: Usage | None = None


Exchange = Callable[[float], Awaitable[Answer]]


def final_answer(turns: Sequence[Turn], expected: int) -> tuple[str | None, tuple[str, ...]]:
    """The reply and citations of a conversation: its last turn's, if every turn answered."""
    if len(turns) != expected or any(turn.failure is not None for turn in turns):
        return None, ()
    return turns[-1].reply, turns[-1].citations


class ConversationArm(ABC):
    """An arm that plays each conversation of an attempt on its own, under a shared bound."""

    def __init__(
        self, http: httpx.AsyncClient, system: SystemConfig, *, retry: RetryPolicy
    ) -> None:
        self._http = http
        self._system = system
        self._retry = retry
        self._slots = asyncio.Semaphore(system.concurrency)

    async def attempt(
        self, case: Case, *, attempt: int, fields: Mapping[str, JsonValue]
    ) -> Evidence:
        """Run one attempt of `case`: its turns and each variant's, as separate conversations.

        Failures are recorded in the turns; this raises only on a bug or a bad setup.
        """
        self.check_fields(fields)
        started = datetime.now(UTC)
        try:
            async with asyncio.TaskGroup() as group:
                base = group.create_task(self._conversation(case.turns, fields))
                variants = [
                    (variant, group.create_task(self._conversation(variant.turns, fields)))
                    for variant in case.variants
                ]
        except ExceptionGroup as errors:
            raise errors.exceptions[0] from errors
        turns = base.result()
        reply, citations = final_answer(turns, len(case.turns))
        variant_evidence: list[VariantEvidence] = []
        for variant, task in variants:
            variant_turns = task.result()
            variant_reply, variant_citations = final_answer(variant_turns, len(variant.turns))
            variant_evidence.append(
                VariantEvidence(
                    id=variant.id,
                    reply=variant_reply,
                    citations=variant_citations,
                    turns=variant_turns,
                )
            )
        return Evidence(
            case_id=case.id,
            suite=case.suite,
            split=case.split,
            attempt=attempt,
            turns=turns,
            reply=reply,
            citations=citations,
            variants=tuple(variant_evidence),
            started_at=started,
            finished_at=datetime.now(UTC),
        )

    def check_fields(self, fields: Mapping[str, JsonValue]) -> None:
        """Refuse setup fields that the arm cannot send (raise `ArmError`); any by default."""
        return None

    @abstractmethod
    async def converse(
        self, turns: Sequence[str], fields: Mapping[str, JsonValue]
    ) -> tuple[Turn, ...]:
        """Play one conversation, stopping after the first failed turn."""

    async def _conversation(
        self, turns: Sequence[str], fields: Mapping[str, JsonValue]
    ) -> tuple[Turn, ...]:
        async with self._slots:
            return await self.converse(turns, fields)

    async def timed_turn(self, text: str, exchange: Exchange) -> Turn:
        """Run one turn under the `timeout_s` deadline and record its answer or failure.

        `exchange` gets the deadline (a `loop.time()`) so that retries do not wait past it.
        `duration_s` counts the whole turn, retries and their waits included, on the same
        clock.
        """
        timeout_s = self._system.timeout_s
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout_s
        failure: Failure | None = None
        answer = Answer(reply=None)
        try:
            async with asyncio.timeout_at(deadline):
                answer = await exchange(deadline)
        except TurnFailed as failed:
            failure = failed.failure
        except TimeoutError:
            failure = Failure(code="timeout", detail=f"the turn took longer than {timeout_s:g} s")
        return Turn(
            input=text,
            reply=answer.reply,
            citations=answer.citations,
            usage=answer.usage,
            duration_s=loop.time() - started,
            failure=failure,
        )

    async def send_turn(self, request: httpx.Request, deadline: float) -> httpx.Response:
        """Send a turn's request with the arm's retries and return its 2xx streaming response.

        The caller reads and closes the response.

        Raises:
            TurnFailed: the request failed for good (see `send`).
        """
        return await send(
            self._http,
            request,
            max_retries=self._system.max_retries,
            policy=self._retry,
            deadline=deadline,
        )
