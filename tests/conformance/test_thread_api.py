"""How the harness speaks to a soev-thread system and records what went wrong (SPEC.md 6),
and the chat-completions kind."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import CLI, invoke
from tests.conformance.support import FakeChatServer, FakeThreadSystem, Turn, dump

CITED = "BWBR0005537/artikel-6:7"


def scripted() -> Any:
    once: dict[str, itertools.count] = {}

    def answer(text: str, history: list[str]) -> Turn:
        if text.startswith("eenmaal-"):
            status = int(text.split(":")[0].removeprefix("eenmaal-"))
            counter = once.setdefault(text, itertools.count())
            return Turn(http_status=status) if next(counter) == 0 else Turn(f"Na {status}.")
        if text.startswith("mislukt"):
            return Turn(failure="model_unavailable")
        if text.startswith("fout"):
            return Turn(error_event="internal")
        if text.startswith("afgebroken"):
            return Turn("half antwoord", no_status=True)
        if text.startswith("altijd-druk"):
            return Turn(http_status=503)
        if text.startswith("geweigerd"):
            return Turn(http_status=400)
        if text.startswith("twee"):
            return Turn(
                "Het laatste antwoord.",
                refs=[CITED],
                extra_frames=[
                    ("model_output", {"content": "Een eerder antwoord.", "citations": []})
                ],
            )
        if text.startswith("onopgelost"):
            return Turn("Met citaten.", refs=[CITED], unresolved=["BWBR0005537/artikel-6:8"])
        if text.startswith("weigering"):
            return Turn("Sorry.  IK KAN geen vragen over\npersoonsgegevens   beantwoorden. Groet.")
        if text.startswith("wachtend"):
            return Turn("Ik wacht op u.", final_state="waiting")
        if text.startswith("traag"):
            return Turn("Te laat.", delay_s=3.0)
        return Turn(f"Antwoord op: {text}", refs=[CITED])

    return answer


CASES = [
    ("c-failure", ["mislukt: vraag", "vervolg"]),
    ("c-error", ["fout: vraag"]),
    ("c-no-status", ["afgebroken: vraag"]),
    ("c-retry", ["eenmaal-503: vraag"]),
    ("c-429", ["eenmaal-429: vraag"]),
    ("c-502", ["eenmaal-502: vraag"]),
    ("c-504", ["eenmaal-504: vraag"]),
    ("c-busy", ["altijd-druk: vraag"]),
    ("c-400", ["geweigerd: vraag"]),
    ("c-two-outputs", ["twee: vraag"]),
    ("c-unresolved", ["onopgelost: vraag"]),
    ("c-slow", ["traag: vraag"]),
    ("c-ok", ["gewoon: vraag", "gewoon: vervolg"]),
    ("c-refusal", ["weigering: vraag"]),
    ("c-waiting", ["wachtend: vraag", "gewoon: daarna"]),
]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory, shared_dagster_home: Path) -> Iterator[Any]:
    with FakeThreadSystem(scripted()) as system:
        system.delete_status = 404
        directory = tmp_path_factory.mktemp("thread") / "p"
        dump(
            directory / "project.yaml",
            {
                "name": "draad",
                "system": {
                    "base_url": system.url,
                    "agent": "wetwijzer",
                    "timeout_s": 2.0,
                    "max_retries": 1,
                },
                "suites": [{"name": "s", "files": "s.yaml"}],
                "messages": {
                    "privacy": "Ik kan geen vragen over persoonsgegevens beantwoorden.",
                    "out_of_scope": "Die vraag valt buiten wat ik kan beantwoorden.",
                },
            },
        )
        dump(
            directory / "s.yaml",
            {
                "suite": "s",
                "criteria": [{"kind": "run.no_failure"}],
                "cases": [{"id": case_id, "turns": turns} for case_id, turns in CASES],
            },
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DAGSTER_HOME", str(shared_dagster_home))
            result = invoke("run", "--project", directory / "project.yaml", "--run-id", "r1")
        lines = (directory / "runs" / "r1" / "evidence.jsonl").read_text().splitlines()
        yield result, {json.loads(line)["case_id"]: json.loads(line) for line in lines}, system


def test_the_run_completes(outcome: Any) -> None:
    result, evidence, _ = outcome
    assert result.status == 0, result.err
    assert set(evidence) == {case_id for case_id, _ in CASES}


@pytest.mark.parametrize(
    "case_id", ["c-failure", "c-error", "c-no-status", "c-busy", "c-400", "c-slow"]
)
def test_a_failed_turn_is_recorded_and_ends_the_attempt(outcome: Any, case_id: str) -> None:
    _, evidence, _ = outcome
    line = evidence[case_id]
    turns = line["turns"]
    assert len(turns) == 1  # the attempt ended at the failed turn
    failure = turns[0]["failure"]
    assert failure is not None and failure["code"]


def test_a_failure_event_keeps_its_code(outcome: Any) -> None:
    _, evidence, system = outcome
    assert evidence["c-failure"]["turns"][0]["failure"]["code"] == "model_unavailable"
    texts = [r.body["input"]["text"] for r in system.posts()]
    assert "vervolg" not in texts


def test_retries_on_503_then_succeeds(outcome: Any) -> None:
    _, evidence, system = outcome
    line = evidence["c-retry"]
    assert line["turns"][0]["failure"] is None
    assert line["reply"] == "Na 503."
    busy = [r for r in system.opens() if r.body["input"]["text"].startswith("altijd-druk")]
    assert len(busy) == 2  # max_retries: 1
    refused = [r for r in system.opens() if r.body["input"]["text"].startswith("geweigerd")]
    assert len(refused) == 1  # 400 is not retried


@pytest.mark.parametrize("status", [429, 502, 504])
def test_retries_on_429_and_502_to_504(outcome: Any, status: int) -> None:
    _, evidence, _ = outcome
    line = evidence[f"c-{status}"]
    assert line["turns"][0]["failure"] is None
    assert line["reply"] == f"Na {status}."


def test_the_reply_is_the_last_model_output(outcome: Any) -> None:
    _, evidence, _ = outcome
    assert evidence["c-two-outputs"]["reply"] == "Het laatste antwoord."


def test_only_resolved_citations_count(outcome: Any) -> None:
    _, evidence, _ = outcome
    assert evidence["c-unresolved"]["citations"] == [CITED]


def test_a_multi_turn_case_uses_the_thread_and_is_deleted(outcome: Any) -> None:
    _, evidence, system = outcome
    line = evidence["c-ok"]
    assert [turn["reply"] for turn in line["turns"]] == [
        "Antwoord op: gewoon: vraag",
        "Antwoord op: gewoon: vervolg",
    ]
    follow = [r for r in system.posts() if r.body["input"]["text"] == "gewoon: vervolg"]
    assert len(follow) == 1 and follow[0].path.endswith("/inputs")
    assert line["turns"][0]["failure"] is None  # a 404 on DELETE counts as gone


def test_a_waiting_status_ends_the_turn(outcome: Any) -> None:
    _, evidence, _ = outcome
    line = evidence["c-waiting"]
    assert [turn["failure"] for turn in line["turns"]] == [None, None]
    assert line["turns"][0]["reply"] == "Ik wacht op u."


def test_refusal_code_is_the_message_the_reply_holds(outcome: Any) -> None:
    _, evidence, _ = outcome
    assert evidence["c-refusal"]["refusal_code"] == "privacy"
    assert evidence["c-ok"]["refusal_code"] is None


def test_concurrency_bounds_the_attempts_in_flight(tmp_path: Path, cli: CLI) -> None:
    with FakeThreadSystem(lambda text, history: Turn("Even geduld.", delay_s=0.25)) as system:
        directory = tmp_path / "c"
        dump(
            directory / "project.yaml",
            {
                "name": "gelijktijdig",
                "system": {"base_url": system.url, "agent": "a", "concurrency": 2},
                "suites": [{"name": "s", "files": "s.yaml"}],
            },
        )
        cases = [
            {"id": f"c{n}", "input": f"vraag {n}", "criteria": [{"kind": "run.no_failure"}]}
            for n in range(6)
        ]
        dump(directory / "s.yaml", {"suite": "s", "cases": cases})
        result = cli("run", "--project", directory / "project.yaml", "--run-id", "r1")
        assert result.status == 0, result.err
        assert len(system.opens()) == 6
        assert system.max_in_flight == 2


# --------------------------------------------------------------------------- chat-completions


def test_chat_completions_kind_sends_the_turns_as_a_conversation(tmp_path: Path, cli: CLI) -> None:
    with FakeChatServer(lambda body: f"Antwoord {len(body['messages'])}") as server:
        directory = tmp_path / "cc"
        dump(
            directory / "project.yaml",
            {
                "name": "cc",
                "system": {
                    "kind": "chat-completions",
                    "base_url": server.url,
                    "model": "assistent-1",
                },
                "suites": [{"name": "s", "files": "s.yaml"}],
            },
        )
        dump(
            directory / "s.yaml",
            {
                "suite": "s",
                "cases": [
                    {
                        "id": "c1",
                        "turns": ["Eerste vraag?", "Tweede vraag?"],
                        "criteria": [{"kind": "run.no_failure"}],
                    }
                ],
            },
        )
        result = cli("run", "--project", directory / "project.yaml", "--run-id", "r1")
        assert result.status == 0, result.err
        line = json.loads((directory / "runs" / "r1" / "evidence.jsonl").read_text())
        assert server.paths == ["/v1/chat/completions"] * 2
        assert all(body["model"] == "assistent-1" for body in server.bodies)
        second = server.bodies[1]["messages"]
        assert [m["role"] for m in second][-3:] == ["user", "assistant", "user"]
        assert second[-3]["content"] == "Eerste vraag?" and second[-1]["content"] == "Tweede vraag?"
        assert line["reply"] == line["turns"][-1]["reply"]
        assert line["citations"] == [] and all(t["citations"] == [] for t in line["turns"])
