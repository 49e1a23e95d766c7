"""inspect_ai's side of bench/peers.py: the soev thread API as a model, one sample per attempt.

bench/peers.py copies this file next to a generated `samples.jsonl` and runs `inspect eval`
on it in the peers' venv. Its model does the HTTP work of bench/throughput.py's bare loop.
"""

import json
from pathlib import Path
from typing import Any

import httpx
from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    get_model,
    modelapi,
)
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
from inspect_ai.tool import ToolChoice, ToolInfo


@modelapi(name="soev")
class SoevThread(ModelAPI):
    """Open a thread, read its stream to the turn's `status`, delete the thread."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        config = config or GenerateConfig()
        super().__init__(model_name, base_url, api_key, [], config)
        connections = config.max_connections or 10
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self.client = httpx.AsyncClient(base_url=base_url or "", limits=limits, timeout=60)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        body = {"input": {"text": input[-1].text}, "agent": "bench"}
        headers = {"Accept": "text/event-stream"}
        reply, ended = "", False
        async with self.client.stream(
            "POST", "v1/chat/threads", json=body, headers=headers
        ) as response:
            response.raise_for_status()
            thread = response.headers["X-Soev-Thread-Id"]
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif event == "model_output" and line.startswith("data:"):
                    reply = json.loads(line[5:])["content"]
                elif event == "status" and line.startswith("data:"):
                    ended = True
                    break
        await self.client.delete(f"v1/chat/threads/{thread}")
        if not ended:
            raise RuntimeError(f"thread {thread!r}: the stream ended without a status event")
        return ModelOutput.from_content(model=self.model_name, content=reply)


@task
def soev_bench(base_url: str, concurrency: int) -> Task:
    config = GenerateConfig(max_connections=int(concurrency))
    return Task(
        dataset=json_dataset(str(Path(__file__).with_name("samples.jsonl"))),
        solver=generate(),
        scorer=includes(),
        model=get_model("soev/thread", base_url=base_url, config=config),
    )
