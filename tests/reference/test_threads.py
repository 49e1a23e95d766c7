"""The reference server speaks the soev thread API (docs/systems.md#the-soev-thread-api) over
real HTTP: black-box tests of the reference assistant, end to end."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.core import Case, Evidence, SystemConfig
from soev_pipeline.reference import DEFAULT_MESSAGES, ReferenceServer, bundled_corpus
from tests.reference.wire import (
    SSE,
    THREADS,
    body,
    cited_refs,
    follow_up,
    one,
    open_thread,
    parse_frames,
)

pytestmark = pytest.mark.e2e

QUESTION = "Binnen welke termijn moet ik bezwaar maken?"


def test_open_answers_201_with_thread_id_and_a_stream_of_the_first_turn(
    client: httpx.Client, server: ReferenceServer
) -> None:
    response = client.post(THREADS, json=body(QUESTION), headers=SSE)

    assert response.status_code == 201
    thread_id = response.headers["x-soev-thread-id"]
    assert response.headers["location"] == f"/v1/chat/threads/{thread_id}"
    assert response.headers["content-type"] == "text/event-stream"
    frames = parse_frames(response.text)
    assert [frame.id for frame in frames] == list(range(1, len(frames) + 1))
    events = [frame.event for frame in frames]
    assert events[:3] == ["opened", "input", "tool_output"]
    assert events[-2:] == ["model_output", "status"]
    assert set(events[3:-2]) == {"delta"}
    assert frames[-1].data["state"] == "idle"
    assert thread_id in server.service.threads


def test_tool_output_elements_are_corpus_units_with_id_ref_and_text(client: httpx.Client) -> None:
    _, frames = open_thread(client, QUESTION)

    tool_output = one(frames, "tool_output")
    corpus = bundled_corpus()
    assert tool_output["call_id"]
    elements = tool_output["elements"]
    assert [element["id"] for element in elements] == ["el-1", "el-2", "el-3"]
    for element in elements:
        unit = corpus.get(element["ref"])
        assert unit is not None
        assert element["text"] == unit.text
        assert element["title"] == f"{unit.law}, artikel {unit.article}"


def test_model_output_quotes_and_cites_the_best_unit(client: httpx.Client) -> None:
    _, frames = open_thread(client, QUESTION)

    output = one(frames, "model_output")
    content = output["content"]
    assert content.startswith("Volgens artikel 6:7 Awb: ")
    assert cited_refs(frames) == ["BWBR0005537/artikel-6:7"]
    citation = output["citations"][0]
    assert citation["status"] == "resolved"
    assert content[: citation["at"]].endswith('zes weken."')
    quoted = content.split('"')[1]
    assert quoted in bundled_corpus().units["BWBR0005537/artikel-6:7"].text
    deltas = "".join(frame.data["text"] for frame in frames if frame.event == "delta")
    assert deltas == content
    usage = output["usage"]
    assert usage["prompt_tokens"] > usage["completion_tokens"] > 0


def test_follow_up_continues_the_thread_and_searches_with_the_previous_question(
    client: httpx.Client,
) -> None:
    thread_id, first = open_thread(client, QUESTION)
    second = follow_up(client, thread_id, "Wanneer begint die termijn?")
    _, alone = open_thread(client, "Wanneer begint die termijn?")

    assert second[0].id == first[-1].id + 1
    assert "opened" not in [frame.event for frame in second]
    assert [element["id"] for element in one(second, "tool_output")["elements"]] == [
        "el-4",
        "el-5",
        "el-6",
    ]
    assert "BWBR0005537/artikel-6:8" in cited_refs(second)
    assert "BWBR0005291/artikel-3:307" not in cited_refs(second)
    assert cited_refs(alone)[0] == "BWBR0005291/artikel-3:307"


def test_delete_answers_204_then_404(client: httpx.Client, server: ReferenceServer) -> None:
    thread_id, _ = open_thread(client, QUESTION)
    deleted = server.counters.threads_deleted

    first = client.delete(f"{THREADS}/{thread_id}")
    second = client.delete(f"{THREADS}/{thread_id}")
    follow = client.post(f"{THREADS}/{thread_id}/inputs", json={"input": {"text": "En?"}})

    assert first.status_code == 204
    assert first.content == b""
    assert second.status_code == 404
    assert second.json()["code"] == "not_found"
    assert follow.status_code == 404
    assert server.counters.threads_deleted == deleted + 1
    assert thread_id not in server.service.threads


def test_read_returns_state_and_the_durable_events(client: httpx.Client) -> None:
    thread_id, frames = open_thread(client, QUESTION)

    view = client.get(f"{THREADS}/{thread_id}").json()

    assert view["thread_id"] == thread_id
    assert view["status"]["state"] == "idle"
    types = [event["type"] for event in view["events"]]
    assert types == ["opened", "input", "tool_output", "model_output"]
    assert view["events"][3]["payload"] == one(frames, "model_output")


def test_without_event_stream_accept_the_open_answers_the_thread_view(
    client: httpx.Client,
) -> None:
    response = client.post(THREADS, json=body(QUESTION))

    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    view = response.json()
    assert view["thread_id"] == response.headers["x-soev-thread-id"]
    assert view["events"][-1]["type"] == "model_output"


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        (body(QUESTION, stream=True), 400, "unknown_field"),
        ({"input": {"text": QUESTION, "colour": "blue"}, "agent": "a"}, 400, "unknown_field"),
        ({"input": {"text": QUESTION}}, 422, "invalid_field"),
        ({"input": {"text": QUESTION}, "agent": ""}, 422, "invalid_field"),
        ({"input": {"text": "  "}, "agent": "a"}, 422, "invalid_field"),
        ({"input": "tekst", "agent": "a"}, 422, "invalid_field"),
        ({"input": {"text": QUESTION}, "agent": "a", "model": 3}, 422, "invalid_field"),
        ([1, 2], 400, "invalid_field"),
    ],
)
def test_bad_open_bodies_are_problems(
    client: httpx.Client, payload: object, status: int, code: str
) -> None:
    response = client.post(THREADS, json=payload, headers=SSE)

    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["code"] == code
    assert problem["detail"]


def test_a_follow_up_refuses_the_agent_field(client: httpx.Client) -> None:
    thread_id, _ = open_thread(client, QUESTION)

    response = client.post(f"{THREADS}/{thread_id}/inputs", json=body("En daarna?"))

    assert response.status_code == 400
    assert response.json()["code"] == "unknown_field"


def test_invalid_json_unknown_paths_and_methods_are_problems(client: httpx.Client) -> None:
    broken = client.post(
        THREADS, content=b"{not json", headers={"content-type": "application/json"}
    )
    elsewhere = client.get("v1/chat/other")
    wrong_method = client.get(THREADS)

    assert (broken.status_code, broken.json()["code"]) == (400, "invalid_field")
    assert (elsewhere.status_code, elsewhere.json()["code"]) == (404, "not_found")
    assert (wrong_method.status_code, wrong_method.json()["code"]) == (405, "method_not_allowed")


def test_the_authorization_header_is_accepted(client: httpx.Client) -> None:
    response = client.post(
        THREADS, json=body(QUESTION), headers={**SSE, "Authorization": "Bearer geheim"}
    )

    assert response.status_code == 201


def test_a_token_server_refuses_requests_without_the_right_bearer() -> None:
    with (
        ReferenceServer(token="geheim") as server,
        httpx.Client(base_url=server.url) as client,
    ):
        missing = client.post(THREADS, json=body(QUESTION), headers=SSE)
        wrong = client.post(
            THREADS, json=body(QUESTION), headers={**SSE, "Authorization": "Bearer fout"}
        )
        right = client.post(
            THREADS, json=body(QUESTION), headers={**SSE, "Authorization": "Bearer geheim"}
        )

    assert (missing.status_code, missing.json()["code"]) == (401, "unauthorized")
    assert wrong.status_code == 401
    assert right.status_code == 201
    assert server.counters.threads_opened == 1


@pytest.mark.parametrize(
    "question",
    [
        "Mijn BSN is 111222333, kan ik bezwaar maken?",
        "Mijn IBAN is NL91ABNA0417164300, mag de gemeente afschrijven?",
        "Bel mij op 06-12345678 over mijn bezwaar.",
        "Mail het naar piet@example.nl alstublieft.",
        "Wat is het adres van mijn buurman?",
        "Geef mij de persoonsgegevens van mijn collega.",
    ],
)
def test_personal_data_questions_get_exactly_the_privacy_message(
    client: httpx.Client, question: str
) -> None:
    _, frames = open_thread(client, question)

    output = one(frames, "model_output")
    assert output["content"] == DEFAULT_MESSAGES["privacy"]
    assert output["citations"] == []
    assert "tool_output" not in [frame.event for frame in frames]


@pytest.mark.parametrize(
    "question",
    ["Hoe maak ik een appeltaart?", "Wat voor weer wordt het morgen?", "Hoeveel kost een fiets?"],
)
def test_questions_outside_the_corpus_get_exactly_the_out_of_scope_message(
    client: httpx.Client, question: str
) -> None:
    _, frames = open_thread(client, question)

    output = one(frames, "model_output")
    assert output["content"] == DEFAULT_MESSAGES["out_of_scope"]
    assert output["citations"] == []


def test_messages_can_be_passed_in() -> None:
    messages = {"privacy": "Geen persoonsgegevens.", "out_of_scope": "Daar weet ik niets van."}
    with (
        ReferenceServer(messages=messages) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        _, refused = open_thread(client, "Mijn BSN is 111222333.")
        _, abstained = open_thread(client, "Hoe maak ik een appeltaart?")

    assert one(refused, "model_output")["content"] == "Geen persoonsgegevens."
    assert one(abstained, "model_output")["content"] == "Daar weet ik niets van."


def test_envelopes_wrap_durable_events_as_the_real_service_does() -> None:
    with (
        ReferenceServer(envelopes=True) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        _, frames = open_thread(client, QUESTION)

    by_event = {frame.event: frame for frame in frames}
    output = by_event["model_output"]
    assert output.data["type"] == "model_output"
    assert output.data["position"] == output.id
    assert output.data["id"] == f"root:{output.id - 1}"
    assert output.data["payload"]["citations"][0]["source"] == "el-1"
    assert by_event["input"].data["actor"] == "user"
    assert "payload" not in by_event["delta"].data
    assert by_event["status"].data["state"] == "idle"


async def _attempt_with_the_arm(url: str) -> Evidence:
    system = SystemConfig(base_url=url, agent="wetwijzer")
    case = Case.model_validate(
        {"id": "c-1", "suite": "kern", "turns": [QUESTION, "Wanneer begint die termijn?"]}
    )
    async with create_http_client(system) as http:
        return await SoevThreadArm(http, system).attempt(case, attempt=0, fields={})


@pytest.mark.parametrize("envelopes", [False, True])
def test_the_thread_arm_reads_a_conversation_with_the_reference_server(envelopes: bool) -> None:
    with ReferenceServer(envelopes=envelopes) as server:
        evidence = asyncio.run(_attempt_with_the_arm(server.url))

    assert evidence.failure is None
    first, second = evidence.turns
    assert first.citations == ("BWBR0005537/artikel-6:7",)
    assert first.usage is not None and first.usage.prompt_tokens > 0
    assert "BWBR0005537/artikel-6:8" in second.citations
    assert evidence.reply == second.reply
    assert server.counters.threads_opened == server.counters.threads_deleted == 1
