"""What comes over the wire, through the CLI: text that cannot be written (a lone surrogate
from the system or the judge), secrets echoed in every form, a tampered archive, and a
corporate proxy (docs/systems.md "What is redacted", docs/runs.md "What is refused").

Each test makes its small project on the spot, with a system and a judge of its own.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.chat_completions import FakeChatCompletions, completion, labels_of
from tests.support.cli import Result, invoke, run_module
from tests.support.project import dump
from tests.support.proxy import ForwardProxy
from tests.support.thread_api import FakeThreadAPI, Pause, Reply, frame

pytestmark = pytest.mark.e2e

LONE = "\\ud83d"
"""Half of an emoji, as JSON carries it."""
HALF = json.loads(f'"{LONE}"')


def write(
    root: Path,
    system: str,
    judge: str,
    cases: tuple[str, ...],
    *,
    system_extra: dict[str, Any] | None = None,
    judge_extra: dict[str, Any] | None = None,
) -> Path:
    """A one-suite project whose cases ask the judge (`privacy.names`) and run a regex."""
    dump(
        root / "suites" / "w.yaml",
        {
            "suite": "w",
            "criteria": [
                {"kind": "run.no_failure"},
                {"kind": "privacy.names"},
                {"kind": "reply.not_contains", "regex": ["(a+)+$"]},
            ],
            "cases": [{"id": case_id, "input": f"Vraag {case_id}?"} for case_id in cases],
        },
    )
    dump(
        root / "project.yaml",
        {
            "name": "draad",
            "system": {"base_url": system, "agent": "a", "max_retries": 0, **(system_extra or {})},
            "judge": {"base_url": judge, "model": "judge-model", **(judge_extra or {})},
            "suites": [{"name": "w", "files": "suites/w.yaml"}],
        },
    )
    return root / "project.yaml"


def ok(result: Result) -> Result:
    assert result.status == 0, result.text
    assert "Traceback" not in result.text and "internal error" not in result.text
    return result


def raw(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


# ---------------------------------------------------------------------- 1. text from the wire


def half_emoji(text: str, history: list[str]) -> Any:
    """Replies, citations and failures that hold a lone surrogate escape."""
    if "w-reply" in text:
        return [
            raw("tool_output", f'{{"elements": [{{"id": "e1", "ref": "BWBR{LONE}/artikel-1"}}]}}'),
            raw(
                "model_output",
                f'{{"content": "Zes weken {LONE}", "citations": '
                '[{"source": "e1", "status": "resolved"}]}',
            ),
            frame("status", {"state": "idle"}),
        ]
    if "w-fail" in text:
        return [raw("failure", f'{{"code": "model_error", "detail": "kapot {LONE}"}}')]
    return Reply("Gewoon antwoord.")


def judge_with_half_emoji(body: dict[str, Any]) -> Any:
    """The judge's answers: half an emoji in the body's JSON, or in the answer's JSON."""
    inputs = json.loads(body["messages"][1]["content"])
    if "Zes weken" in inputs.get("text", ""):
        answer = '{"label": "none", "detail": "ziet \\ud83d"}'  # an escape in the answer
    else:
        answer = f'{{"label": "none", "detail": "ziet {HALF}"}}'  # a surrogate in the body
    assert labels_of(body) == ["none", "name"]
    return completion(body=json.dumps({"choices": [{"message": {"content": answer}}]}).encode())


def test_half_an_emoji_from_the_system_or_the_judge_stops_nothing(tmp_path: Path) -> None:
    """The worst failure of the trial: one such reply stopped the run, and one such judge
    answer, once cached, stopped every rescore."""
    cases = ("w-reply", "w-fail", "w-ok")
    with (
        FakeThreadAPI(half_emoji) as system,
        FakeChatCompletions(judge_with_half_emoji) as judge,
    ):
        project = write(tmp_path / "p", system.url, judge.url, cases)
        ok(invoke("run", "--project", project, "--run-id", "w"))
        asked = len(judge.requests)
        for _ in range(2):
            ok(invoke("rescore", "w", "--project", project))
        ok(invoke("rescore", "w", "--offline", "--project", project))
        ok(invoke("run", "--resume", "w", "--project", project))
        report = ok(invoke("report", "w", "--json", "--project", project)).json()
    assert len(judge.requests) == asked  # every rescore answered from the cache
    run = project.parent / "runs" / "w"
    lines = [json.loads(line) for line in (run / "evidence.jsonl").read_bytes().splitlines()]
    evidence = {line["case_id"]: line for line in lines}
    assert len(lines) == 3
    assert evidence["w-reply"]["reply"] == "Zes weken \ufffd"
    assert evidence["w-reply"]["citations"] == ["BWBR\ufffd/artikel-1"]
    assert evidence["w-fail"]["turns"][0]["failure"] == {
        "code": "model_error",
        "detail": "failure event: kapot \ufffd",
    }
    details = {
        case["case_id"]: {v["kind"]: v for v in case["attempts"][0]["verdicts"]}
        for case in report["cases"]
    }
    assert details["w-reply"]["privacy.names"]["detail"].endswith("ziet \ufffd")
    assert details["w-ok"]["privacy.names"]["status"] == "pass"
    cache = (project.parent / ".soev" / "judge-cache.sqlite").read_bytes()
    assert b"\\ud83d" not in cache and "ziet \ufffd".encode() in cache


# ---------------------------------------------------------------------- 2. secrets


SYSTEM_KEY = "sk-Sys_4f9c2e7a1b3d"
JUDGE_KEY = "jk-Judge_8d7c6b5a4e3f"
TENANT = "tenant-6a5b4c3d"
REGION = "region-secret-99"
SECRETS = (SYSTEM_KEY, JUDGE_KEY, TENANT, REGION)


def forms(secret: str) -> list[bytes]:
    """What a byte scan looks for: each form that an echo of `secret` may take."""
    data = secret.encode()
    found = [
        data,
        data.upper(),
        data.lower(),
        data.hex().encode(),
        quote(secret, safe="").encode(),
        base64.b64encode(data).rstrip(b"="),
    ]
    for user in (b"u:", b"ab:", b"abc:"):  # `Basic` credentials, at each alignment
        encoded = base64.b64encode(user + data)  # the characters that only `data` decides:
        found.append(encoded[(8 * len(user) + 5) // 6 : 8 * (len(user) + len(data)) // 6])
    return found


class Echoes(FakeThreadAPI):
    """A system that echoes what it was sent back in every form it can think of."""

    heard: dict[str, str] = {}  # noqa: RUF012 - one system per test

    async def handle(self, request: Any) -> Any:
        Echoes.heard = dict(request.headers)
        return await super().handle(request)


def echo_everything(text: str, history: list[str]) -> Any:
    heard = Echoes.heard
    bearer = heard.get("authorization", "").removeprefix("Bearer ")
    tenant = heard.get("x-tenant", "")
    said = f"{bearer.upper()} {base64.b64encode(f'u:{bearer}'.encode()).decode()} {tenant}"
    if "w-split" in text:  # over two data lines, and the key cut in two by the network
        body = f' "sleutel {bearer}", "citations": []}}'.encode()
        cut = body.index(bearer.encode()) + len(bearer) // 2
        return [
            b'event: model_output\ndata: {"content":\ndata:' + body[:cut],
            Pause(0.05),
            body[cut:] + b"\n\n",
            frame("status", {"state": "idle"}),
        ]
    if "w-cut" in text:  # the key across the cut of a 300-character failure detail
        detail = "x" * 270 + bearer
        return [frame("failure", {"code": "echo", "detail": detail})]
    if "w-hex" in text:
        return Reply(f"{quote(bearer, safe='')} {bearer.encode().hex()} {said}", refs=[tenant])
    return Reply(said)


def judge_echo(body: dict[str, Any]) -> Any:
    detail = f"{'y' * 150}{JUDGE_KEY} {JUDGE_KEY.swapcase()}"
    return completion(json.dumps({"label": labels_of(body)[0], "detail": detail}))


def test_secrets_in_every_form_are_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the instance goes under the project
    for name, value in [
        ("W_SYSTEM_KEY", SYSTEM_KEY),
        ("W_JUDGE_KEY", JUDGE_KEY),
        ("W_TENANT", TENANT),
        ("W_REGION", REGION),
    ]:
        monkeypatch.setenv(name, value)
    cases = ("w-split", "w-cut", "w-hex", "w-plain")
    with Echoes(echo_everything) as system, FakeChatCompletions(judge_echo) as judge:
        project = write(
            tmp_path / "p",
            system.url,
            judge.url,
            cases,
            system_extra={
                "api_key_env": "W_SYSTEM_KEY",
                "headers": {"X-Tenant": "${W_TENANT}:${W_REGION}"},
            },
            judge_extra={"api_key_env": "W_JUDGE_KEY"},
        )
        results = [
            ok(invoke("run", "--project", project, "--run-id", "s")),
            ok(invoke("rescore", "s", "--project", project)),
            ok(invoke("report", "s", "--json", "--project", project)),
            ok(invoke("report", "s", "--project", project)),
        ]
    assert Echoes.heard["x-tenant"] == f"{TENANT}:{REGION}"
    assert judge.requests[0].headers["authorization"] == f"Bearer {JUDGE_KEY}"
    printed = capfd.readouterr()
    written = [path for path in project.parent.rglob("*") if path.is_file()]
    names = {path.name for path in written}
    assert {"evidence.jsonl", "verdicts.jsonl", "judge-cache.sqlite", "manifest.json"} <= names
    assert any(path.suffix == ".db" for path in written), "no Dagster instance was scanned"
    outputs = [r.text.encode() for r in results] + [printed.out.encode(), printed.err.encode()]
    for secret in SECRETS:
        for form in forms(secret):
            for path in written:
                if path.name != "project.yaml":
                    assert form not in path.read_bytes(), (secret, form, path)
            for output in outputs:
                assert form not in output, (secret, form)
    lines = (project.parent / "runs" / "s" / "evidence.jsonl").read_text(encoding="utf-8")
    replies = {line["case_id"]: line["reply"] for line in map(json.loads, lines.splitlines())}
    assert replies["w-split"] == "sleutel [redacted]"
    assert lines.count("[redacted]") >= 8


# ---------------------------------------------------------------------- 3. a tampered archive


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished run `t` (2 cases, k=2) of a project whose system and judge are gone."""
    root = tmp_path_factory.mktemp("finished") / "p"
    with FakeThreadAPI() as system, FakeChatCompletions() as judge:
        project = write(root, system.url, judge.url, ("w-a", "w-b"))
        ok(invoke("run", "--project", project, "--run-id", "t", "--k", "2"))
    yield project


def copy_of(project: Path, tmp_path: Path) -> Path:
    shutil.copytree(project.parent, tmp_path / "p")
    return tmp_path / "p" / "project.yaml"


def test_an_attempt_outside_the_runs_k_is_skipped_with_a_warning(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    evidence = project.parent / "runs" / "t" / "evidence.jsonl"
    first = json.loads(evidence.read_bytes().splitlines()[0])
    forged = [{**first, "attempt": attempt} for attempt in (2, 99)]
    with evidence.open("a", encoding="utf-8") as stream:
        stream.writelines(json.dumps(line) + "\n" for line in forged)
    # in a process of its own: what the user sees is the warning on stderr
    rescored = ok(run_module("rescore", "t", "--offline", "--project", project))
    warnings = [line for line in rescored.err.splitlines() if "outside 0..1" in line]
    assert [w.split(": ")[1] for w in warnings] == ["line 5", "line 6"], rescored.err
    report = ok(invoke("report", "t", "--json", "--project", project)).json()
    assert report["overall"]["attempts"] == 4
    assert sorted(a["attempt"] for c in report["cases"] for a in c["attempts"]) == [0, 0, 1, 1]


def test_a_fifo_in_place_of_the_report_is_one_line_at_once(finished: Path, tmp_path: Path) -> None:
    project = copy_of(finished, tmp_path)
    [report] = (project.parent / "runs" / "t" / "scorings").glob("*/report.json")
    report.unlink()
    os.mkfifo(report)
    outcome: list[Result] = []
    worker = threading.Thread(
        target=lambda: outcome.append(invoke("report", "t", "--project", project)), daemon=True
    )
    started = time.monotonic()
    worker.start()
    worker.join(timeout=60)  # a reader that opened the FIFO would wait here for ever
    assert outcome, f"report still waits after {time.monotonic() - started:.0f} s"
    assert outcome[0].status == 1
    assert f"{report}: not a regular file" in outcome[0].error_line()


def test_a_manifest_in_another_runs_folder_is_refused(finished: Path, tmp_path: Path) -> None:
    project = copy_of(finished, tmp_path)
    runs = project.parent / "runs"
    (runs / "t").rename(runs / "ander")
    for command in (("report", "ander"), ("rescore", "ander", "--offline")):
        result = invoke(*command, "--project", project)
        assert result.status == 1
        assert "the manifest is of run 't', not of 'ander'" in result.error_line()


# ---------------------------------------------------------------------- 4. a proxy


def test_a_run_behind_a_proxy_sends_the_system_and_the_judge_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeThreadAPI() as system, FakeChatCompletions() as judge, ForwardProxy() as proxy:
        project = write(tmp_path / "p", system.url, judge.url, ("w-a",))
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "proxy-bypass.example")
        ok(invoke("run", "--project", project, "--run-id", "p"))
    origin = system.url.rstrip("/")
    assert f"POST {origin}/v1/chat/threads" in proxy.seen
    assert f"POST {judge.url}chat/completions" in proxy.seen
    assert len(proxy.seen) == len(system.requests) + len(judge.requests)
