"""The LLM judge: it asks a model, through an adapter, for a label, and fails closed.

A missing, unparseable or disallowed answer is a `JudgeError`, which a criterion records as
an error verdict; nothing here turns it into a pass or a guess. Error messages name the task
and the kind of failure, never the inputs or the answer, because test cases are secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.chars import scrub
from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.ports import JudgeRequest, JudgeResult
from soev_pipeline.core.secrets import redact

from .cache import JudgeCache, cache_key
from .offline import OfflineLLM
from .stats import JudgeStats

CHARS_PER_TOKEN = 3
"""The context-window estimate: one token per 3 characters, more tokens than Dutch text takes."""
WINDOW_MARGIN = 0.10
"""The share of the estimate added on top of it for safety."""
ANSWER_TOKENS = 1024
"""The room kept in the context window for the answer."""
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
"""A reasoning block as reasoning models served by Ollama or vLLM put it before the answer."""

logger = logging.getLogger(__name__)


@runtime_checkable
class JudgeLLM(Protocol):
    """The model of an `LLMJudge`: an adapter that sends one chat request and returns the answer.

    `complete` must raise `JudgeError` for a failed call: a criterion records it as an
    error verdict, while any other exception stops the run. An adapter may also have a
    `model` attribute: the judge records it in each result and in the cache key.
    """

    @property
    def context_window(self) -> int | None:
        """The context window of the model in tokens, or None when unknown."""
        ...

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        """Send one chat request and return the text of the answer."""
        ...


def verdict_schema(labels: Sequence[str]) -> dict[str, JsonValue]:
    """Return the JSON schema of an answer: a `label` from `labels` and a `detail` string.

    The schema is strict (every property required, no other properties), the form that
    structured-output implementations accept.
    """
    return {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": list(labels)},
            "detail": {"type": "string"},
        },
        "required": ["label", "detail"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class _Answer:
    label: str
    detail: str
    cached: bool


def strip_reasoning(text: str) -> str:
    """`text` without one leading reasoning block, `<think>…</think>` (or `<thinking>`,
    `<reasoning>`), and the whitespace around it.

    Only a block at the very start is taken away, up to the first closing tag of its name;
    a block anywhere else, or one that is never closed, stays, so that the answer fails to
    parse: the judge fails closed.
    """
    body = text.lstrip()
    if not body.startswith("<"):
        return text
    block = _REASONING.match(body)
    return body[block.end() :].lstrip() if block is not None else text


def parse_answer(task: str, text: str, allowed_labels: Sequence[str]) -> tuple[str, str]:
    """Return the label and detail of a model's answer, or raise `JudgeError`.

    The answer must be a JSON object (a leading reasoning block, see `strip_reasoning`, and
    a Markdown code fence around it are tolerated) whose `label` is one of
    `allowed_labels`, spelled exactly; `detail` must be a string when present. The detail
    comes back with its secrets redacted and lone surrogates replaced, as it will be
    archived. The error names `task` and what was wrong, never the answer itself.
    """
    body = strip_reasoning(text).strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3].removeprefix("json").strip()
    try:
        data = json.loads(body)
    except ValueError:
        raise JudgeError(f"judge answer for {task!r} is not valid JSON") from None
    if not isinstance(data, dict):
        raise JudgeError(f"judge answer for {task!r} is not a JSON object")
    label = data.get("label")
    if not isinstance(label, str):
        raise JudgeError(f"judge answer for {task!r} has no label string")
    if label not in allowed_labels:
        allowed = ", ".join(allowed_labels)
        raise JudgeError(f"judge answer for {task!r} has a label that is not one of: {allowed}")
    detail = data.get("detail", "")
    if not isinstance(detail, str):
        raise JudgeError(f"judge answer for {task!r} has a detail that is not a string")
    return label, redact(scrub(detail))


class LLMJudge:
    """A `Judge` that asks a model, through a `JudgeLLM` adapter, for a label.

    For each request the system message is the request's context prefix, a blank line, and
    the prompt of the request's task (only the prompt when there is no prefix). The user
    message is the request's inputs as JSON, so the text under evaluation stays data. The
    answer must be JSON of `verdict_schema(request.allowed_labels)`.

    With a cache, every valid answer is stored, as the label and detail read from it (secrets
    redacted, unencodable text replaced), and the same question is never asked twice, also
    not by two concurrent requests; a stored answer that no longer validates is dropped and
    asked again. With `repeats` above 1, each request is asked that
    many times (each ask a question of its own in the cache) and the label that more than
    half of the asks gave wins; without such a majority the request fails closed.

    Args:
        llm: the model, through an adapter for its provider.
        prompts: the prompt of each task, by task name, for example from `load_prompts`.
            The judge copies it.
        cache: where answers are stored and found; None to always ask the model.
        repeats: how many times to ask each request.
    """

    def __init__(
        self,
        llm: JudgeLLM,
        prompts: Mapping[str, str],
        *,
        cache: JudgeCache | None = None,
        repeats: int = 1,
    ) -> None:
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        self._llm = llm
        self._prompts = dict(prompts)
        self._shas = {task: sha256_text(text) for task, text in self._prompts.items()}
        self._cache = cache
        self._repeats = repeats
        self._model = _model_name(llm)
        self._inflight: dict[str, tuple[asyncio.Lock, int]] = {}
        self.stats = JudgeStats()

    @property
    def model(self) -> str | None:
        """The name of the judge model, when the adapter gives one."""
        return self._model

    def stats_dict(self) -> dict[str, object]:
        """What the judge did so far, as plain values (the `ReportsStats` port)."""
        return self.stats.as_dict()

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        """Return the label of the model for `request`.

        Raises:
            JudgeError: there is no prompt for the task; the answer is not valid JSON of
                the schema or has a label the request does not allow; the call failed;
                the request has a context prefix and the model's context window is
                unknown or too small; or repeated asks reached no majority.
        """
        self.stats.requests += 1
        try:
            return await self._judge(request)
        except JudgeError:
            self.stats.failures += 1
            raise

    async def _judge(self, request: JudgeRequest) -> JudgeResult:
        task = request.task
        prompt = self._prompts.get(task)
        if prompt is None:
            raise JudgeError(f"no judge prompt for the task {task!r}")
        system = f"{request.context_prefix}\n\n{prompt}" if request.context_prefix else prompt
        system = scrub(system)
        user = scrub(json.dumps(request.inputs, ensure_ascii=False, sort_keys=True))
        if request.context_prefix:
            self._check_window(task, system, user)
        schema = verdict_schema(request.allowed_labels)
        if self._repeats == 1:
            answer = await self._answer(request, system, user, schema, repeat=0)
            return self._result(task, answer.label, answer.detail, cached=answer.cached)
        return await self._majority(request, system, user, schema)

    async def _majority(
        self, request: JudgeRequest, system: str, user: str, schema: dict[str, JsonValue]
    ) -> JudgeResult:
        asks = await asyncio.gather(
            *(
                self._answer(request, system, user, schema, repeat=repeat)
                for repeat in range(self._repeats)
            ),
            return_exceptions=True,
        )
        answers: list[_Answer] = []
        failures: list[JudgeError] = []
        for ask in asks:
            if isinstance(ask, _Answer):
                answers.append(ask)
            elif isinstance(ask, JudgeError):
                failures.append(ask)
            else:
                raise ask
        counts = Counter(answer.label for answer in answers)
        ranked = counts.most_common()
        if not ranked or ranked[0][1] * 2 <= self._repeats:
            tally = ", ".join(f"{label} {count}" for label, count in sorted(counts.items()))
            failed = f", {len(failures)} failed: {failures[0]}" if failures else ""
            raise JudgeError(
                f"judge asks for {request.task!r} reached no majority "
                f"({tally or 'no answers'} of {self._repeats}{failed})"
            )
        label, agreeing = ranked[0]
        self.stats.record_agreement(request.task, agreeing=agreeing, asked=self._repeats)
        first = next(answer for answer in answers if answer.label == label)
        agreement = f"agreement {agreeing}/{self._repeats}"
        detail = f"{first.detail} ({agreement})" if first.detail else agreement
        cached = not failures and all(answer.cached for answer in answers)
        return self._result(request.task, label, detail, cached=cached)

    async def _answer(
        self,
        request: JudgeRequest,
        system: str,
        user: str,
        schema: dict[str, JsonValue],
        *,
        repeat: int,
    ) -> _Answer:
        task, labels = request.task, request.allowed_labels
        if self._cache is None:
            text = await self._call(task, system, user, schema)
            return _Answer(*parse_answer(task, text, labels), cached=False)
        key = cache_key(model=self._model, system=system, user=user, schema=schema, repeat=repeat)
        async with self._single_flight(key):
            stored = await self._cache.get(key)
            if stored is not None:
                try:
                    label, detail = parse_answer(task, stored, labels)
                except JudgeError:
                    # an entry that no longer validates (edited by hand) is asked again
                    logger.warning(
                        "judge cache: an answer for %r does not validate; dropped, asked again",
                        task,
                    )
                    await self._cache.drop(key)
                else:
                    self.stats.cache_hits += 1
                    return _Answer(label, detail, cached=True)
            text = await self._call(task, system, user, schema)
            label, detail = parse_answer(task, text, labels)
            # the answer as it was read, not as it came: no reasoning, no fence, no escape
            answer = json.dumps({"label": label, "detail": detail}, ensure_ascii=False)
            await self._cache.put(key, answer, task=task, model=self._model)
            return _Answer(label, detail, cached=False)

    async def _call(self, task: str, system: str, user: str, schema: dict[str, JsonValue]) -> str:
        if not isinstance(self._llm, OfflineLLM):
            self.stats.calls += 1
        text: object = await self._llm.complete(system=system, user=user, schema=schema)
        if not isinstance(text, str):
            raise JudgeError(f"judge answer for {task!r} is not text")
        return redact(scrub(text))

    def _check_window(self, task: str, system: str, user: str) -> None:
        window = self._llm.context_window
        if window is None:
            raise JudgeError(
                f"judge request for {task!r} has a context prefix, but the judge model's "
                "context window is unknown; set judge.context_window"
            )
        estimate = math.ceil((len(system) + len(user)) / CHARS_PER_TOKEN)
        needed = math.ceil(estimate * (1 + WINDOW_MARGIN)) + ANSWER_TOKENS
        if needed > window:
            raise JudgeError(
                f"judge request for {task!r} needs about {needed} tokens with its safety "
                f"margin, more than the context window of {window}"
            )

    def _result(self, task: str, label: str, detail: str, *, cached: bool) -> JudgeResult:
        return JudgeResult(
            label=label,
            detail=detail,
            model=self._model,
            prompt_sha=self._shas[task],
            cached=cached,
        )

    @asynccontextmanager
    async def _single_flight(self, key: str) -> AsyncIterator[None]:
        """Let one request per key ask at a time, so a concurrent twin finds its answer."""
        lock, users = self._inflight.get(key, (asyncio.Lock(), 0))
        self._inflight[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._inflight[key]
            if users == 1:
                del self._inflight[key]
            else:
                self._inflight[key] = (lock, users - 1)


def _model_name(llm: JudgeLLM) -> str | None:
    model = getattr(llm, "model", None)
    return model if isinstance(model, str) else None
