"""Test cases are secret: no request content reaches a log line or an error message."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback

import httpx
import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.models import Verdict
from soev_pipeline.core.ports import CriterionContext, JudgeRequest
from soev_pipeline.criteria import judge_label
from soev_pipeline.judges import ChatCompletionsLLM, LLMJudge, load_prompts
from tests.support.chat_completions import NOWHERE, FakeChatCompletions, Response, completion

MARKER = "GEHEIM-7f3a-jansen"


def secret_request() -> JudgeRequest:
    return JudgeRequest(
        task="privacy.names",
        inputs={"text": f"Mijn buurman {MARKER} woont op nummer 3."},
        allowed_labels=("none", "name"),
    )


def failures() -> list[Response]:
    """Server answers that each fail the judge, and echo the secret where they can."""
    echoed = MARKER.encode()
    return [
        completion(status=500, body=b'{"error": "crashed on ' + echoed + b'"}'),
        completion(status=400, body=b'{"error": "cannot handle ' + echoed + b'"}'),
        completion(status=429, headers={"Retry-After": "0"}, body=echoed),
        completion(content=f"The text mentions {MARKER}."),
        completion(content=f'{{"label": "{MARKER}", "detail": "{MARKER}"}}'),
        completion(content=f'{{"label": "name", "detail": ["{MARKER}"]}}'),
        completion(body=b"<html>" + echoed + b"</html>"),
        completion(body=b'{"choices": [{"message": {"refusal": "' + echoed + b'"}}]}'),
        completion(delay_s=2.0, content=MARKER),
    ]


@pytest.fixture
def server() -> FakeChatCompletions:
    return FakeChatCompletions()


@pytest.mark.parametrize("index", range(9))
def test_no_request_content_in_logs_or_errors(
    server: FakeChatCompletions, caplog: pytest.LogCaptureFixture, index: int
) -> None:
    failing = failures()[index]
    server.answer = lambda body: failing
    caplog.set_level(logging.DEBUG)
    socket = failing.delay_s > 0  # a timeout needs a real connection

    async def main() -> tuple[JudgeError, Verdict]:
        url, transport = (server.url, None) if socket else (NOWHERE + "v1/", server.transport())
        timeout = 0.15 if socket else 5.0
        async with httpx.AsyncClient(base_url=url, timeout=timeout, transport=transport) as client:
            llm = ChatCompletionsLLM(client, "judge-model", max_retries=1, backoff_s=0.01)
            judge = LLMJudge(llm, load_prompts())
            with pytest.raises(JudgeError) as caught:
                await judge.judge(secret_request())
            verdict = await judge_label(secret_request(), CriterionContext(judge=judge))
            assert isinstance(verdict, Verdict)
            return caught.value, verdict

    with server if socket else contextlib.nullcontext():
        exc, verdict = asyncio.run(main())

    assert MARKER in server.bodies[0]["messages"][1]["content"]
    assert verdict.status == "error"
    assert str(exc) in verdict.detail
    assert MARKER not in "".join(traceback.format_exception(exc))
    assert MARKER not in verdict.detail
    assert MARKER not in caplog.text


def test_a_successful_request_logs_no_content(
    server: FakeChatCompletions, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def main() -> None:
        transport = server.transport()
        async with httpx.AsyncClient(base_url=NOWHERE + "v1/", transport=transport) as client:
            judge = LLMJudge(ChatCompletionsLLM(client, "judge-model"), load_prompts())
            await judge.judge(secret_request())

    asyncio.run(main())

    assert server.calls == 1
    assert MARKER not in caplog.text
