"""LLMJudge over the chat/completions adapter and the fake endpoint, through a MockTransport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from soev_pipeline.core.canonical import sha256_text
from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.models import Verdict
from soev_pipeline.core.ports import CriterionContext, Judge, JudgeRequest, JudgeResult
from soev_pipeline.criteria import judge_label
from soev_pipeline.judges import (
    ChatCompletionsLLM,
    JudgeLLM,
    LLMJudge,
    load_prompts,
    verdict_schema,
)
from tests.support.chat_completions import NOWHERE, FakeChatCompletions, completion, verdict
from tests.support.judge_llm import ExampleJudgeLLM

BEHAVIOUR = ("answer", "refuse", "abstain")


def behaviour_request(reply: str = "De termijn is zes weken.", **fields: Any) -> JudgeRequest:
    inputs = {"question": ["Hoe lang heb ik voor bezwaar?"], "reply": reply}
    return JudgeRequest(
        task="behaviour.expected", inputs=inputs, allowed_labels=BEHAVIOUR, **fields
    )


@pytest.fixture
def server() -> FakeChatCompletions:
    return FakeChatCompletions()


@asynccontextmanager
async def judge_over(
    server: FakeChatCompletions, *, context_window: int | None = None, **options: Any
) -> AsyncIterator[LLMJudge]:
    transport = server.transport()
    async with httpx.AsyncClient(base_url=NOWHERE + "v1/", transport=transport) as client:
        llm = ChatCompletionsLLM(
            client,
            "judge-model",
            context_window=context_window,
            max_retries=options.pop("max_retries", 0),
            backoff_s=0.01,
        )
        yield LLMJudge(llm, options.pop("prompts", load_prompts()), **options)


def ask(server: FakeChatCompletions, request: JudgeRequest, **options: Any) -> JudgeResult:
    async def main() -> JudgeResult:
        async with judge_over(server, **options) as judge:
            return await judge.judge(request)

    return asyncio.run(main())


def test_a_valid_label_is_returned_with_what_graded_it(server: FakeChatCompletions) -> None:
    server.queue(verdict("refuse", "declines on privacy grounds"))
    request = behaviour_request(reply="Daar kan ik niets over zeggen. Ü")

    result = ask(server, request)

    prompt = load_prompts()["behaviour.expected"]
    assert result == JudgeResult(
        label="refuse",
        detail="declines on privacy grounds",
        model="judge-model",
        prompt_sha=sha256_text(prompt),
        cached=False,
    )
    sent = server.bodies[0]
    assert sent["model"] == "judge-model"
    assert sent["messages"] == [
        {"role": "system", "content": prompt},
        {"role": "user", "content": json.dumps(request.inputs, ensure_ascii=False, sort_keys=True)},
    ]
    assert "Ü" in sent["messages"][1]["content"]
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "strict": True, "schema": verdict_schema(BEHAVIOUR)},
    }
    assert sent["temperature"] == 0.0
    assert sent["seed"] == 0


def test_the_schema_allows_exactly_the_request_labels() -> None:
    schema = verdict_schema(("support", "not_support"))

    assert schema == {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["support", "not_support"]},
            "detail": {"type": "string"},
        },
        "required": ["label", "detail"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("content", "failure"),
    [
        ("the reply answers the question", "is not valid JSON"),
        ('{"label": "answer", ', "is not valid JSON"),
        ('["answer"]', "is not a JSON object"),
        ('{"detail": "no label"}', "has no label string"),
        ('{"label": 1, "detail": ""}', "has no label string"),
        ('{"label": "pass", "detail": "x"}', "a label that is not one of: answer, refuse, abstain"),
        ('{"label": "Answer", "detail": "x"}', "a label that is not one of"),
        ('{"label": "answer", "detail": 3}', "detail that is not a string"),
    ],
)
def test_an_unusable_answer_fails_closed(
    server: FakeChatCompletions, content: str, failure: str
) -> None:
    server.queue(completion(content=content))

    with pytest.raises(JudgeError, match=r"'behaviour\.expected'") as caught:
        ask(server, behaviour_request())

    assert failure in str(caught.value)


def test_a_fenced_answer_and_a_missing_detail_are_accepted(server: FakeChatCompletions) -> None:
    server.queue(completion(content='```json\n{"label": "abstain"}\n```'))

    result = ask(server, behaviour_request())

    assert (result.label, result.detail) == ("abstain", "")


def test_a_task_without_a_prompt_is_refused_before_any_call(server: FakeChatCompletions) -> None:
    request = JudgeRequest(task="tone.friendly", inputs={"reply": "Hoi"}, allowed_labels=("yes",))

    with pytest.raises(JudgeError, match=r"no judge prompt for the task 'tone\.friendly'"):
        ask(server, request)

    assert server.calls == 0


def test_the_judge_copies_its_prompts(server: FakeChatCompletions) -> None:
    prompts = {"behaviour.expected": "Grade the reply."}

    async def main() -> JudgeResult:
        async with judge_over(server, prompts=prompts) as judge:
            prompts["behaviour.expected"] = "Changed afterwards."
            return await judge.judge(behaviour_request())

    result = asyncio.run(main())

    assert server.bodies[0]["messages"][0]["content"] == "Grade the reply."
    assert result.prompt_sha == sha256_text("Grade the reply.")


def test_a_context_prefix_goes_before_the_prompt_when_it_fits(server: FakeChatCompletions) -> None:
    request = behaviour_request(context_prefix="Wetstekst: artikel 6:7 Awb, in eigen woorden.")

    ask(server, request, context_window=8192)

    system = server.bodies[0]["messages"][0]["content"]
    prompt = load_prompts()["behaviour.expected"]
    assert system == f"Wetstekst: artikel 6:7 Awb, in eigen woorden.\n\n{prompt}"


def test_a_context_prefix_is_refused_when_the_window_is_unknown(
    server: FakeChatCompletions,
) -> None:
    request = behaviour_request(context_prefix="Gedeelde context.")

    with pytest.raises(JudgeError, match="context window is unknown"):
        ask(server, request, context_window=None)

    assert server.calls == 0


def test_a_context_prefix_is_refused_when_it_does_not_fit(server: FakeChatCompletions) -> None:
    prompt_chars = len(load_prompts()["behaviour.expected"])
    window = 4096
    # Fits with the room for the answer, but not once the 10% margin is added.
    prefix = "x" * (3 * (window - 1024) - prompt_chars - 200)
    request = behaviour_request(context_prefix=prefix)

    with pytest.raises(JudgeError, match="more than the context window of 4096"):
        ask(server, request, context_window=window)

    assert server.calls == 0
    ask(server, behaviour_request(context_prefix="short"), context_window=window)
    assert server.calls == 1


def test_without_a_prefix_the_window_is_not_checked(server: FakeChatCompletions) -> None:
    result = ask(server, behaviour_request(reply="x" * 50_000), context_window=None)

    assert result.label == "answer"


def test_a_failing_endpoint_gives_an_error_verdict_and_the_next_request_works(
    server: FakeChatCompletions,
) -> None:
    failing: Callable[[dict[str, Any]], Any] = lambda body: completion(status=500)  # noqa: E731
    server.answer = failing

    async def main() -> tuple[JudgeResult | Verdict, JudgeResult | Verdict]:
        async with judge_over(server, max_retries=2) as judge:
            assert isinstance(judge, Judge)
            ctx = CriterionContext(judge=judge)
            first = await judge_label(behaviour_request(), ctx)
            server.answer = lambda body: verdict("abstain")
            second = await judge_label(behaviour_request(), ctx)
            assert judge.stats.as_dict() == {
                "requests": 2,
                "calls": 2,
                "cache_hits": 0,
                "failures": 1,
            }
            return first, second

    first, second = asyncio.run(main())

    assert isinstance(first, Verdict)
    assert first.status == "error"
    assert first.detail == (
        "judge failed on 'behaviour.expected': judge call failed: HTTP 500 after 2 retries"
    )
    assert isinstance(second, JudgeResult)
    assert second.label == "abstain"
    assert server.calls == 4


def test_repeats_below_one_are_refused() -> None:
    fake = FakeChatCompletions()

    async def main() -> None:
        async with httpx.AsyncClient(base_url=NOWHERE + "v1/", transport=fake.transport()) as http:
            with pytest.raises(ValueError, match="repeats"):
                LLMJudge(ExampleJudgeLLM(http, "my-judge-model"), {}, repeats=0)

    asyncio.run(main())
    assert fake.calls == 0


@pytest.mark.parametrize(("answer", "label"), [(None, "answer"), ("Het is goed.", None)])
def test_the_adapter_example_of_the_reference_is_a_judge_llm(
    answer: str | None, label: str | None
) -> None:
    fake = FakeChatCompletions()
    if answer is not None:
        fake.queue(answer)

    async def main() -> JudgeResult:
        async with httpx.AsyncClient(base_url=NOWHERE + "v1/", transport=fake.transport()) as http:
            llm = ExampleJudgeLLM(http, "my-judge-model")
            assert isinstance(llm, JudgeLLM)
            return await LLMJudge(llm, load_prompts()).judge(behaviour_request())

    if label is None:
        with pytest.raises(JudgeError):
            asyncio.run(main())
    else:
        assert asyncio.run(main()).label == label
    assert fake.bodies[0]["model"] == "my-judge-model"
