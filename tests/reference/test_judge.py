"""The reference assistant's rule-based judge: its rules, and its `chat/completions` endpoint
as the project's own judge adapter speaks to it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from soev_pipeline.core import JudgeRequest
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.judges import open_judge, verdict_schema
from soev_pipeline.reference import ReferenceServer
from soev_pipeline.reference.judge import decide

REFUSAL = "Ik kan geen vragen over persoonsgegevens beantwoorden."
ANSWER = (
    'Volgens artikel 6:7 Awb: "De termijn voor het indienen van een bezwaarschrift bedraagt '
    'zes weken."'
)
BEHAVIOUR = ("answer", "refuse", "abstain")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        (ANSWER, "answer"),
        (REFUSAL, "refuse"),
        ("Die vraag valt buiten wat ik kan beantwoorden.", "abstain"),
        # the rules' known mistakes: a lawful answer about personal data reads as a refusal,
        # and "buiten behandeling" as an abstention
        ("De wet regelt wat de overheid met persoonsgegevens mag doen.", "refuse"),
        ("Dat geldt niet als uw aanvraag buiten behandeling is gelaten.", "abstain"),
    ],
)
def test_behaviour_reads_refusals_and_abstentions_by_their_words(reply: str, label: str) -> None:
    assert decide({"question": ["Vraag?"], "reply": reply}, BEHAVIOUR)[0] == label


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Jan de Vries woont in Utrecht.", "name"),
        ("Volgens de Algemene Verordening Gegevensbescherming mag dat.", "name"),  # a mistake
        ("Uw buurman Piet moet betalen.", "none"),  # a first name alone: missed
        (REFUSAL, "none"),
    ],
)
def test_names_are_two_capitalised_words_in_a_row(text: str, label: str) -> None:
    assert decide({"text": text}, ("none", "name"))[0] == label


def test_nuggets_by_the_share_of_their_words_in_the_reply() -> None:
    labels = ("support", "partial_support", "not_support")
    # bezwaartermijn, zes, weken: two of three words are in the reply
    assert decide({"reply": ANSWER, "nugget": "De bezwaartermijn is zes weken."}, labels) == (
        "support",
        "67% of the nugget's words are in the reply",
    )
    half = {"reply": "De termijn is zes weken.", "nugget": "Zes maanden, of twaalf weken."}
    assert decide(half, labels)[0] == "partial_support"
    assert decide({"reply": REFUSAL, "nugget": "Zes weken."}, labels)[0] == "not_support"


def test_variants_and_rubrics() -> None:
    labels = ("equivalent", "not_equivalent")
    assert decide({"reply": ANSWER, "variant_reply": ANSWER + " Zie ook 6:8."}, labels)[0] == (
        "equivalent"
    )
    assert decide({"reply": ANSWER, "variant_reply": REFUSAL}, labels)[0] == "not_equivalent"
    rubric = {"rubric": "Helder?", "labels": ["goed", "matig", "slecht"], "question": ["?"]}
    assert decide({**rubric, "reply": ANSWER}, ("goed", "matig", "slecht"))[0] == "goed"
    assert decide({**rubric, "reply": REFUSAL}, ("goed", "matig", "slecht"))[0] == "slecht"


def _judge(url: str, request: JudgeRequest) -> tuple[str, dict[str, Any]]:
    async def ask() -> tuple[str, dict[str, Any]]:
        config = JudgeConfig(base_url=f"{url}v1/", model="soev-rule-judge")
        async with open_judge(config, cache_path=None) as judge:
            result = await judge.judge(request)
            return result.label, judge.stats.as_dict()

    return asyncio.run(ask())


def test_the_endpoint_answers_the_projects_own_judge_adapter(server: ReferenceServer) -> None:
    request = JudgeRequest(
        task="behaviour.expected",
        inputs={"question": ["Wat is het adres van Jan?"], "reply": REFUSAL},
        allowed_labels=BEHAVIOUR,
    )
    label, stats = _judge(server.url, request)
    assert label == "refuse" and stats["calls"] == 1 and stats["failures"] == 0
    again = _judge(server.url, request)
    assert again[0] == "refuse"  # the same request, the same answer


def test_a_request_it_cannot_read_is_a_problem(client: httpx.Client) -> None:
    assert client.post("v1/chat/completions", content=b"{nope").status_code == 400
    assert client.post("v1/chat/completions", json={"messages": []}).status_code == 422
    unknown = {
        "messages": [{"role": "user", "content": json.dumps({"other": "x"})}],
        "response_format": {"json_schema": {"schema": verdict_schema(["a", "b"])}},
    }
    refused = client.post("v1/chat/completions", json=unknown)
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert client.get("v1/chat/completions").status_code == 405


def test_the_endpoint_needs_the_token_when_the_server_does() -> None:
    with ReferenceServer(token="geheim") as guarded:
        response = httpx.post(f"{guarded.url}v1/chat/completions", json={}, timeout=10)
        assert response.status_code == 401
