"""SoevThreadArm against the fake thread API over a MockTransport: conversations, citations,
usage, headers and concurrency."""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import Any

import httpx
import pytest

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.models import Case, Evidence, Usage
from soev_pipeline.core.project import CitationsConfig
from tests.support.builders import FAST_RETRY, conversation, system_config
from tests.support.clock import on_virtual_clock
from tests.support.thread_api import HANG, NOWHERE, FakeThreadAPI, Pause, Reply, cite, frame

pytestmark = pytest.mark.anyio

ELEMENTS = [
    {"id": "e1", "type": "law", "ref": "BWBR0005537/artikel-6:7", "url": "https://x/6:7"},
    {"id": "e2", "type": "law", "ref": "BWBR0005537/artikel-6:8", "url": "https://x/6:8"},
    {"id": 3, "type": "law", "ref": "BWBR0005537/artikel-6:9"},
    {"id": "e4", "type": "note"},
]


@pytest.fixture
def soev() -> FakeThreadAPI:
    return FakeThreadAPI()


def answer(content: str, **fields: Any) -> list[bytes]:
    """The frames of a turn without usage: `elements` and `citations` as given."""
    return Reply(content, usage=None, **fields).frames()


async def run(soev: FakeThreadAPI, case: Case, fields: Any = None, **system: Any) -> Evidence:
    config = system_config(NOWHERE, **system)
    async with create_http_client(config, transport=soev.transport()) as http:
        arm = SoevThreadArm(http, config, retry=FAST_RETRY)
        return await arm.attempt(case, attempt=2, fields=fields or {})


async def test_one_turn_opens_a_thread_reads_the_reply_and_deletes_it(soev: FakeThreadAPI) -> None:
    fields = {"knowledge": [{"key": "awb", "name": "Awb"}]}
    evidence = await run(soev, conversation("Hoe lang?"), fields, model="m-1")

    assert evidence.reply == "antwoord 1 op Hoe lang?"
    assert evidence.citations == ()
    assert (evidence.case_id, evidence.suite, evidence.split, evidence.attempt) == (
        "c-1",
        "kern",
        "dev",
        2,
    )
    assert evidence.refusal_code is None
    assert evidence.started_at.tzinfo == UTC
    assert evidence.started_at <= evidence.finished_at
    [turn] = evidence.turns
    assert (turn.input, turn.reply, turn.failure, turn.usage) == (
        "Hoe lang?",
        "antwoord 1 op Hoe lang?",
        None,
        None,
    )
    assert turn.duration_s > 0
    [opened] = soev.routed("open")
    assert opened.json() == {
        "input": {"text": "Hoe lang?", "knowledge": [{"key": "awb", "name": "Awb"}]},
        "agent": "wetwijzer",
        "model": "m-1",
    }
    assert opened.headers["accept"] == "text/event-stream"
    assert soev.deleted == ["thread-1"]
    assert soev.threads == {}


async def test_no_model_is_sent_when_none_is_set(soev: FakeThreadAPI) -> None:
    await run(soev, conversation("Vraag"))
    assert "model" not in soev.routed("open")[0].json()


async def test_turns_after_the_first_go_to_the_inputs_of_the_same_thread(
    soev: FakeThreadAPI,
) -> None:
    evidence = await run(soev, conversation("Een", "Twee", "Drie"), {"texts": ["x"]})

    assert [turn.reply for turn in evidence.turns] == [
        "antwoord 1 op Een",
        "antwoord 2 op Twee",
        "antwoord 3 op Drie",
    ]
    assert evidence.reply == "antwoord 3 op Drie"
    inputs = soev.routed("input")
    assert [request.path for request in inputs] == ["/v1/chat/threads/thread-1/inputs"] * 2
    assert [request.json() for request in inputs] == [
        {"input": {"text": "Twee"}},
        {"input": {"text": "Drie"}},
    ]
    assert soev.deleted == ["thread-1"]


async def test_variants_run_as_threads_of_their_own(soev: FakeThreadAPI) -> None:
    case = conversation("Basis", variants=(("Andere woorden",), ("Eerst", "Dan")))
    evidence = await run(soev, case, {"knowledge": []})

    assert evidence.reply == "antwoord 1 op Basis"
    assert [variant.id for variant in evidence.variants] == ["c-1-0", "c-1-1"]
    first, second = evidence.variants
    assert first.reply == "antwoord 1 op Andere woorden"
    assert [turn.input for turn in second.turns] == ["Eerst", "Dan"]
    assert second.reply == "antwoord 2 op Dan"
    opened = sorted(request.json()["input"]["text"] for request in soev.routed("open"))
    assert opened == ["Andere woorden", "Basis", "Eerst"]
    assert all(request.json()["input"]["knowledge"] == [] for request in soev.routed("open"))
    assert sorted(soev.deleted) == ["thread-1", "thread-2", "thread-3"]


async def test_resolved_citations_name_the_ref_of_earlier_elements(soev: FakeThreadAPI) -> None:
    def script(text: str, history: list[str]) -> list[Any]:
        if not history:
            return answer("Eerst.", elements=ELEMENTS[:2], citations=[cite("e1")])
        citations = [
            cite("e2"),
            cite("e1"),
            cite("e2"),  # a duplicate
            cite(3),  # an integer id
            cite("e1", status="unresolved"),
            cite("nope"),  # no such element
            cite("e4"),  # an element without a ref
        ]
        return answer("Dan.", elements=ELEMENTS[2:], citations=citations)

    soev.script = script
    evidence = await run(soev, conversation("Een", "Twee"))

    assert evidence.turns[0].citations == ("BWBR0005537/artikel-6:7",)
    assert evidence.citations == (
        "BWBR0005537/artikel-6:8",
        "BWBR0005537/artikel-6:7",
        "BWBR0005537/artikel-6:9",
    )


async def test_a_citation_cannot_name_an_element_that_comes_after_it(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        frame("model_output", {"content": "Te vroeg.", "citations": [cite("e1")]}),
        frame("tool_output", {"call_id": "c", "elements": ELEMENTS}),
        frame("model_output", {"content": "Nu wel.", "citations": [cite("e1")]}),
        frame("status", {"state": "idle"}),
    ]
    evidence = await run(soev, conversation("Vraag"))
    assert (evidence.reply, evidence.citations) == ("Nu wel.", ("BWBR0005537/artikel-6:7",))


async def test_the_source_field_picks_another_element_field(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: answer(
        "Zie daar.", elements=ELEMENTS, citations=[cite("e2"), cite(3)]
    )
    config = system_config(NOWHERE)
    async with create_http_client(config, transport=soev.transport()) as http:
        arm = SoevThreadArm(http, config, CitationsConfig(source_field="url"))
        evidence = await arm.attempt(conversation("Vraag"), attempt=0, fields={})
    assert evidence.citations == ("https://x/6:8",)


async def test_the_reply_is_the_last_model_output_and_usage_adds_up(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        frame("model_output", {"content": "", "tool_calls": [{"id": "call-1"}], "usage": {
            "prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}}),
        frame("tool_output", {"call_id": "call-1", "elements": ELEMENTS}),
        frame("model_output", {"content": "Zes weken.", "citations": [cite("e1")],
                                   "usage": {"prompt_tokens": 250, "completion_tokens": 20}}),
        frame("status", {"state": "idle"}),
    ]  # fmt: skip
    evidence = await run(soev, conversation("Vraag"))
    [turn] = evidence.turns
    assert turn.reply == "Zes weken."
    assert turn.citations == ("BWBR0005537/artikel-6:7",)
    assert turn.usage == Usage(prompt_tokens=350, completion_tokens=27)


async def test_durable_event_envelopes_are_read_like_bare_payloads(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        frame("tool_output", {"call_id": "c", "elements": ELEMENTS}, position=1, envelope=True),
        frame("model_output", {"content": "Ja.", "citations": [cite("e2")],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
                  position=2, envelope=True),
        # an envelope in a frame without an event line: the type comes from the data
        b'data: {"type": "status", "payload": {"state": "waiting"}}\n\n',
    ]  # fmt: skip
    evidence = await run(soev, conversation("Vraag"))
    assert evidence.reply == "Ja."
    assert evidence.citations == ("BWBR0005537/artikel-6:8",)
    assert evidence.turns[0].usage == Usage(prompt_tokens=1, completion_tokens=2)


async def test_running_status_does_not_end_the_turn(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        frame("status", {"state": "running"}),
        frame("model_output", {"content": "Klaar."}),
        frame("status", {"state": "waiting"}),
    ]
    evidence = await run(soev, conversation("Vraag"))
    assert (evidence.reply, evidence.turns[0].failure) == ("Klaar.", None)


def test_the_turn_ends_on_status_while_the_stream_stays_open(soev: FakeThreadAPI) -> None:
    # The server never ends the body: only an arm that acts on each frame as it arrives
    # sees the status and finishes; one that waits for the body would time out.
    soev.script = lambda text, history: [*answer("Direct."), HANG]
    evidence = on_virtual_clock(run(soev, conversation("Een", "Twee"), timeout_s=3))
    assert [turn.reply for turn in evidence.turns] == ["Direct.", "Direct."]
    assert [turn.duration_s for turn in evidence.turns] == [0.0, 0.0]


def test_a_failure_event_ends_the_turn_while_the_stream_stays_open(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [
        frame("model_output", {"content": "Half."}),
        frame("failure", {"code": "budget_exceeded", "detail": "te veel"}),
        HANG,
    ]
    evidence = on_virtual_clock(run(soev, conversation("Vraag"), timeout_s=3))
    [turn] = evidence.turns
    assert turn.failure is not None and turn.failure.code == "budget_exceeded"
    assert turn.duration_s == 0.0


async def test_authorization_and_extra_headers_go_with_every_request(
    soev: FakeThreadAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOEV_TEST_TOKEN", "s3cret")
    monkeypatch.setenv("SOEV_TEST_TENANT", "gemeente")
    await run(
        soev,
        conversation("Een", "Twee"),
        api_key_env="SOEV_TEST_TOKEN",
        headers={"X-Tenant": "t-${SOEV_TEST_TENANT}"},
    )
    assert [request.method for request in soev.requests] == ["POST", "POST", "DELETE"]
    for request in soev.requests:
        assert request.headers["authorization"] == "Bearer s3cret"
        assert request.headers["x-tenant"] == "t-gemeente"
        assert request.headers["user-agent"].startswith("soev-pipeline/")


async def test_concurrency_bounds_the_streams_open_at_once(soev: FakeThreadAPI) -> None:
    soev.script = lambda text, history: [Pause(0.03), *answer("Ok.")]
    config = system_config(NOWHERE, concurrency=3)
    cases = [
        conversation("Een", "Twee", variants=(("Ander",),), case_id=f"c-{index}")
        for index in range(6)
    ]
    async with create_http_client(config, transport=soev.transport()) as http:
        arm = SoevThreadArm(http, config)
        results = await asyncio.gather(*(arm.attempt(case, attempt=0, fields={}) for case in cases))
    assert all(evidence.failure is None for evidence in results)
    assert len(soev.routed("open")) == 12
    assert soev.max_open_streams == 3
    assert len(soev.deleted) == 12


async def test_the_agent_argument_stands_in_for_a_missing_system_agent(soev: FakeThreadAPI) -> None:
    config = system_config(NOWHERE, agent=None)
    async with create_http_client(config, transport=soev.transport()) as http:
        with pytest.raises(ArmError, match="agent"):
            SoevThreadArm(http, config)
        arm = SoevThreadArm(http, config, agent="projectnaam")
        await arm.attempt(conversation("Vraag"), attempt=0, fields={})
    assert soev.routed("open")[0].json()["agent"] == "projectnaam"


async def test_a_setup_cannot_give_the_text_field(soev: FakeThreadAPI) -> None:
    with pytest.raises(ArmError, match="'text'"):
        await run(soev, conversation("Vraag"), {"text": "iets anders"})
    assert soev.requests == []


async def test_the_arm_refuses_a_chat_completions_system() -> None:
    config = system_config(NOWHERE, kind="chat-completions", model="m")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ArmError, match="chat-completions"):
            SoevThreadArm(http, config)


async def test_the_urls_made_once_are_those_the_client_merges_from_paths() -> None:
    """Open, the next input and the delete go where the client would send the paths of the
    thread API under a base URL with a path, the thread's id quoted whole."""
    sent: list[tuple[str, str]] = []
    thread_id = "a/b c?d"

    def answer_(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, str(request.url)))
        if request.method == "DELETE":
            return httpx.Response(204)
        headers = {"X-Soev-Thread-Id": thread_id, "Content-Type": "text/event-stream"}
        return httpx.Response(200, headers=headers, content=b"".join(answer("ja")))

    config = system_config("http://sys.test/api")
    async with create_http_client(config, transport=httpx.MockTransport(answer_)) as http:
        evidence = await SoevThreadArm(http, config, retry=FAST_RETRY).attempt(
            conversation("Een", "Twee"), attempt=0, fields={}
        )
        thread = http.build_request("GET", "v1/chat/threads/a%2Fb%20c%3Fd").url
    assert [turn.failure for turn in evidence.turns] == [None, None]
    assert sent == [
        ("POST", "http://sys.test/api/v1/chat/threads"),
        ("POST", f"{thread}/inputs"),
        ("DELETE", str(thread)),
    ]
    assert str(thread) == "http://sys.test/api/v1/chat/threads/a%2Fb%20c%3Fd"
