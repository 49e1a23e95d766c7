"""`SoevThreadArm`: the system under test spoken to through the soev chat-thread API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from functools import partial
from urllib.parse import quote

import httpx
from pydantic import JsonValue

from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import RetryPolicy
from soev_pipeline.core.models import Turn
from soev_pipeline.core.project import CitationsConfig, SystemConfig

from .conversation import Answer, ConversationArm
from .events import ThreadElements, TurnReader
from .http import TurnFailed

THREADS = "v1/chat/threads"
DELETE_TIMEOUT_S = 5.0
_STREAM = {"Accept": "text/event-stream"}


class _Thread:
    """One conversation's thread: its id once the system gave it, its URL, its elements."""

    def __init__(self, source_field: str) -> None:
        self.id: str | None = None
        self.elements = ThreadElements(source_field)
        self._url: httpx.URL | None = None

    def url(self, threads: httpx.URL) -> httpx.URL:
        """`threads`/{id}, made the first time it is asked for (it parses the id)."""
        if self._url is None:
            self._url = httpx.URL(f"{threads}/{quote(self.id or '', safe='')}")
        return self._url


class SoevThreadArm(ConversationArm):
    """Runs each conversation of an attempt as a soev thread, and deletes the thread after.

    The first turn opens the thread (`POST v1/chat/threads`, with the case setup's fields in
    its input), each later turn goes to `v1/chat/threads/{id}/inputs`, and every turn is read
    from its event stream as it arrives. Variants run as threads of their own, at the same
    time as the case's thread. See docs/systems.md for the failure codes.

    Args:
        http: a client from `create_http_client(system)`.
        system: the project's `system` section.
        citations: which element field names a cited unit.
        agent: the agent to open threads with; defaults to `system.agent`.
        retry: the backoff of retries.

    Raises:
        ArmError: no agent is known, or `system.kind` is not `soev-thread`.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        system: SystemConfig,
        citations: CitationsConfig | None = None,
        *,
        agent: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if system.kind != "soev-thread":
            raise ArmError(f"SoevThreadArm speaks kind 'soev-thread', not {system.kind!r}")
        chosen = agent or system.agent
        if not chosen:
            raise ArmError("no agent to open threads with: set system.agent in project.yaml")
        super().__init__(http, system, retry=retry or RetryPolicy())
        self.agent = chosen
        self.source_field = (citations or CitationsConfig()).source_field
        # Requests go to URLs made once (per arm, per thread): the client merges a string
        # with its base URL by parsing both again, for every request (httpx.URL objects pass
        # through as they are).
        self._threads = http.build_request("POST", THREADS).url
        self._deletes: set[asyncio.Task[None]] = set()

    def check_fields(self, fields: Mapping[str, JsonValue]) -> None:
        """The turn's text is the case's: a setup cannot give `text`."""
        if "text" in fields:
            raise ArmError("the case setup gave an input field 'text'; the case's turns give it")

    async def converse(
        self, turns: Sequence[str], fields: Mapping[str, JsonValue]
    ) -> tuple[Turn, ...]:
        """Play the turns in one thread; the thread is deleted also on failure or cancel."""
        thread = _Thread(self.source_field)
        played: list[Turn] = []
        try:
            for text in turns:
                turn = await self.timed_turn(text, partial(self._exchange, thread, text, fields))
                played.append(turn)
                if turn.failure is not None:
                    break
        finally:
            if thread.id is not None:
                await self._delete(thread)
        return tuple(played)

    async def _exchange(
        self,
        thread: _Thread,
        text: str,
        fields: Mapping[str, JsonValue],
        deadline: float,
    ) -> Answer:
        """Send one turn (opening the thread with `fields` on the first) and read its answer."""
        if thread.id is None:
            body: dict[str, JsonValue] = {
                "input": {**fields, "text": text},
                "agent": self.agent,
            }
            if self._system.model is not None:
                body["model"] = self._system.model
            url = self._threads
        else:
            body = {"input": {"text": text}}
            opened = thread.url(self._threads)
            url = opened.copy_with(raw_path=opened.raw_path + b"/inputs")
        request = self._http.build_request("POST", url, json=body, headers=_STREAM)
        response = await self.send_turn(request, deadline)
        try:
            if thread.id is None:
                thread.id = response.headers.get("x-soev-thread-id") or None
                if thread.id is None:
                    raise TurnFailed(
                        "missing_thread_id", "the system opened no thread: no X-Soev-Thread-Id"
                    )
            reader = TurnReader(thread.elements, max_frame_bytes=self._system.max_frame_bytes)
            return await reader.read(response.aiter_bytes())
        finally:
            await response.aclose()

    async def _delete(self, thread: _Thread) -> None:
        """Delete a thread, best effort: shielded from cancellation, bounded, never failing.

        When the attempt is cancelled (Ctrl-C), the delete is still awaited, within its own
        short timeout, before the cancellation goes on: the client closes right after, and
        would cut a delete left running in the background.
        """
        task = asyncio.create_task(self._send_delete(thread))
        self._deletes.add(task)
        task.add_done_callback(self._deletes.discard)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait({task}, timeout=DELETE_TIMEOUT_S)
            raise

    async def _send_delete(self, thread: _Thread) -> None:
        timeout_s = min(DELETE_TIMEOUT_S, self._system.timeout_s)
        with contextlib.suppress(Exception):  # a thread left behind never fails the attempt
            async with asyncio.timeout(timeout_s):
                response = await self._http.delete(thread.url(self._threads))
                await response.aclose()
