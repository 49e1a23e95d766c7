"""Test cases are secret: no request content reaches a log line or an error message."""

from __future__ import annotations

import asyncio
import logging
import traceback
from typing import Any

import httpx
import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.models import Verdict
from soev_pipeline.core.ports import CriterionContext, JudgeRequest
from soev_pipeline.criteria import judge_label
from soev_pipeline.judges import ChatCompletionsLLM, LLMJudge, load_prompts

MARKER = "GEHEIM-7f3a-jansen"


def secret_request() -> JudgeRequest:
    return JudgeRequest(
        task="privacy.names",
        inputs={"text": f"Mijn buurman {MARKER} woont op nummer 3."},
        allowed_labels=("none", "name"),
    )


def failures(reply: Any) -> list[Any]:
    """Server answers that each fail the judge, and echo the secret where they can."""
    echoed = MARKER.encode()
    return [
        reply(status=500, body=b'{"error": "crashed on ' + echoed + b'"}'),
        reply(status=400, body=b'{"error": "cannot handle ' + echoed + b'"}'),
        reply(status=429, headers={"Retry-After": "0"}, body=echoed),
        reply(content=f"The text mentions {MARKER}."),
        reply(content=f'{{"label": "{MARKER}", "detail": "{MARKER}"}}'),
        reply(content=f'{{"label": "name", "detail": ["{MARKER}"]}}'),
        reply(body=b"<html>" + echoed + b"</html>"),
        reply(body=b'{"choices": [{"message": {"refusal": "' + echoed + b'"}}]}'),
        reply(delay_s=2.0, content=MARKER),
    ]


@pytest.mark.parametrize("index", range(9))
def test_no_request_content_in_logs_or_errors(
    server: Any, reply: Any, caplog: pytest.LogCaptureFixture, index: int
) -> None:
    failing = failures(reply)[index]
    server.answer = lambda body: failing
    caplog.set_level(logging.DEBUG)

    async def main() -> tuple[JudgeError, Verdict]:
        async with httpx.AsyncClient(base_url=server.url, timeout=0.3) as client:
            llm = ChatCompletionsLLM(client, "judge-model", max_retries=1, backoff_s=0.01)
            judge = LLMJudge(llm, load_prompts())
            with pytest.raises(JudgeError) as caught:
                await judge.judge(secret_request())
            verdict = await judge_label(secret_request(), CriterionContext(judge=judge))
            assert isinstance(verdict, Verdict)
            return caught.value, verdict

    exc, verdict = asyncio.run(main())

    assert MARKER in server.requests[0]["messages"][1]["content"]
    assert verdict.status == "error"
    assert str(exc) in verdict.detail
    assert MARKER not in "".join(traceback.format_exception(exc))
    assert MARKER not in verdict.detail
    assert MARKER not in caplog.text


def test_a_successful_request_logs_no_content(
    server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def main() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=5.0) as client:
            judge = LLMJudge(ChatCompletionsLLM(client, "judge-model"), load_prompts())
            await judge.judge(secret_request())

    asyncio.run(main())

    assert server.calls == 1
    assert MARKER not in caplog.text
