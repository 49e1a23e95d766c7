"""soev_pipeline.judges as the judges reference describes it: LLMJudge, the JudgeLLM adapter
example, load_prompts, prompt_shas and LangidDetector."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from pydantic import JsonValue

from soev_pipeline.core import JudgeError, JudgeRequest, JudgeResult, LanguageDetectionError
from soev_pipeline.judges import LangidDetector, LLMJudge, load_prompts, prompt_shas
from tests.conformance.support import FakeChatServer

TASKS = {
    "behaviour.expected",
    "compare.equivalent",
    "nuggets.coverage",
    "privacy.names",
    "rubric.judge",
}


class RecordingLLM:
    """A JudgeLLM that records each call and answers with `answer`."""

    def __init__(
        self, answer: str = '{"label": "refuse", "detail": "weigert"}', window: int | None = 128_000
    ) -> None:
        self.answer = answer
        self.window = window
        self.calls: list[dict[str, Any]] = []
        self.window_reads = 0

    @property
    def context_window(self) -> int | None:
        self.window_reads += 1
        return self.window

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        self.calls.append({"system": system, "user": user, "schema": schema})
        return self.answer


PROMPTS = {"behaviour.expected": "PROMPT-VAN-DE-TAAK"}
REQUEST = JudgeRequest(
    task="behaviour.expected",
    inputs={"question": ["Waar woont Jan?"], "reply": "Dat zeg ik niet."},
    allowed_labels=("answer", "refuse", "abstain"),
)


def judge(
    llm: Any, request: JudgeRequest = REQUEST, prompts: Mapping[str, str] = PROMPTS
) -> JudgeResult:
    return asyncio.run(LLMJudge(llm, prompts).judge(request))


def test_llm_judge_composes_the_system_and_user_messages() -> None:
    llm = RecordingLLM()
    result = judge(llm)
    assert isinstance(result, JudgeResult)
    assert (result.label, result.detail) == ("refuse", "weigert")
    call = llm.calls[0]
    assert call["system"] == "PROMPT-VAN-DE-TAAK"
    assert json.loads(call["user"]) == REQUEST.inputs


def test_the_context_prefix_comes_before_the_prompt() -> None:
    llm = RecordingLLM()
    judge(llm, REQUEST.model_copy(update={"context_prefix": "GEDEELDE-CONTEXT"}))
    system = llm.calls[0]["system"]
    assert system.startswith("GEDEELDE-CONTEXT")
    assert system.endswith("PROMPT-VAN-DE-TAAK")


def test_the_schema_asks_for_an_allowed_label_and_a_detail() -> None:
    llm = RecordingLLM()
    judge(llm)
    schema = llm.calls[0]["schema"]
    assert schema["type"] == "object"
    assert schema["properties"]["label"]["enum"] == ["answer", "refuse", "abstain"]
    assert schema["properties"]["detail"]["type"] == "string"
    assert "label" in schema["required"]


def test_the_judge_copies_its_prompts() -> None:
    prompts = dict(PROMPTS)
    llm = RecordingLLM()
    llm_judge = LLMJudge(llm, prompts)
    prompts["behaviour.expected"] = "GEWIJZIGD"
    asyncio.run(llm_judge.judge(REQUEST))
    assert llm.calls[0]["system"] == "PROMPT-VAN-DE-TAAK"


@pytest.mark.parametrize(
    "answer",
    [
        "geen json",
        "[]",
        '{"detail": "geen label"}',
        '{"label": "misschien", "detail": "x"}',
        '{"label": 1, "detail": "x"}',
    ],
)
def test_an_invalid_answer_is_a_judge_error(answer: str) -> None:
    with pytest.raises(JudgeError):
        judge(RecordingLLM(answer))


def test_a_task_without_a_prompt_is_a_judge_error() -> None:
    llm = RecordingLLM()
    with pytest.raises(JudgeError):
        judge(llm, REQUEST.model_copy(update={"task": "rubric.judge"}))
    assert llm.calls == []


def test_context_window_is_read_only_for_a_request_with_a_prefix() -> None:
    llm = RecordingLLM(window=None)
    judge(llm)
    assert llm.window_reads == 0
    with pytest.raises(JudgeError):
        judge(llm, REQUEST.model_copy(update={"context_prefix": "context"}))


def test_a_context_prefix_that_does_not_fit_is_refused() -> None:
    request = REQUEST.model_copy(update={"context_prefix": "woord " * 2000})
    small = RecordingLLM(window=1000)
    with pytest.raises(JudgeError):
        judge(small, request)
    assert small.calls == []
    large = RecordingLLM(window=1_000_000)
    assert judge(large, request).label == "refuse"


def test_load_prompts_has_one_prompt_per_built_in_judge_kind() -> None:
    prompts = load_prompts()
    assert set(prompts) == TASKS
    assert all(isinstance(text, str) and text.strip() for text in prompts.values())


def test_prompt_shas_are_sha256_of_the_exact_text() -> None:
    texts = {**load_prompts(), "rubrics/termijn.md": "Beoordeel de termijn.\n"}
    shas = prompt_shas(texts)
    assert set(shas) == set(texts)
    for name, text in texts.items():
        assert shas[name] == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_build_manifest_takes_the_shas() -> None:
    import inspect

    from soev_pipeline.run import build_manifest

    assert "shas" in inspect.signature(build_manifest).parameters


# --------------------------------------------------------------------------- language detection


def test_langid_detector_gives_iso_639_1_codes() -> None:
    detector = LangidDetector()
    dutch = "De termijn voor het indienen van een bezwaarschrift bedraagt zes weken."
    assert detector.detect(dutch) == "nl"
    assert detector.detect(dutch) == "nl"
    assert detector.detect("The deadline for filing an objection is six weeks.") == "en"


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "12345 67890", "!!! ???"])
def test_langid_detector_refuses_text_without_language(text: str) -> None:
    with pytest.raises(LanguageDetectionError):
        LangidDetector().detect(text)


# --------------------------------------------------------------------------- the adapter example


class ChatCompletionsLLM:
    """The JudgeLLM example of the judges reference, as written there."""

    context_window = 128_000

    def __init__(self, client: httpx.AsyncClient, model: str) -> None:
        self._client = client
        self._model = model

    async def complete(self, *, system: str, user: str, schema: Mapping[str, JsonValue]) -> str:
        schema_format = {"name": "verdict", "schema": dict(schema)}
        body = {
            "model": self._model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": schema_format},
        }
        try:
            response = await self._client.post("chat/completions", json=body)
            response.raise_for_status()
            return response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            raise JudgeError(f"judge call failed: {type(exc).__name__}") from exc


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as running:
        yield running


def ask(server: FakeChatServer, request: JudgeRequest = REQUEST) -> JudgeResult:
    async def go() -> JudgeResult:
        async with httpx.AsyncClient(base_url=server.url) as client:
            return await LLMJudge(
                ChatCompletionsLLM(client, "my-judge-model"), load_prompts()
            ).judge(request)

    return asyncio.run(go())


def test_the_adapter_example_works_against_a_chat_completions_server(
    server: FakeChatServer,
) -> None:
    result = ask(server)
    assert result.label == "answer"  # the fake answers with the first allowed label
    body = server.bodies[0]
    assert body["model"] == "my-judge-model"
    assert body["messages"][0]["content"] == load_prompts()["behaviour.expected"]
    assert json.loads(body["messages"][1]["content"]) == REQUEST.inputs
    assert body["response_format"]["json_schema"]["schema"]["properties"]["label"]["enum"] == [
        "answer",
        "refuse",
        "abstain",
    ]


def test_the_adapter_example_with_a_garbage_answer_is_a_judge_error(server: FakeChatServer) -> None:
    server.answer = lambda body: "Ik denk dat het antwoord goed is."
    with pytest.raises(JudgeError):
        ask(server)
