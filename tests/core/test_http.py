"""The one client constructor, header expansion and retry loop that both clients use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from soev_pipeline.arms import create_http_client
from soev_pipeline.core.errors import ArmError, JudgeError, SoevError
from soev_pipeline.core.http import (
    USER_AGENT,
    Client,
    RetryPolicy,
    RetryRules,
    Sent,
    create_client,
    send_with_retries,
)
from soev_pipeline.core.project import JudgeConfig, SystemConfig
from soev_pipeline.judges import judge_headers

TEMPLATE = {"X-Tenant": "${TENANT:-acme}", "X-Key": "${KEY}"}
FAST = RetryPolicy(backoff_s=0.001, backoff_cap_s=0.001, retry_after_cap_s=0.01)
ARM_LIKE = RetryRules(
    status=lambda status: status in {429, 502, 503, 504},
    errors=(httpx.ConnectError, httpx.ConnectTimeout),
)
JUDGE_LIKE = RetryRules(
    status=lambda status: status == 429 or status >= 500,
    errors=(httpx.TimeoutException, httpx.NetworkError),
    give_up_on_long_wait=True,
)


def system_headers() -> dict[str, str]:
    config = SystemConfig.model_validate({"base_url": "http://127.0.0.1:9/", "headers": TEMPLATE})
    return dict(create_http_client(config).headers)


def judge_config_headers() -> dict[str, str]:
    config = JudgeConfig.model_validate(
        {"base_url": "http://127.0.0.1:9/", "model": "m", "headers": TEMPLATE}
    )
    return judge_headers(config)


SIDES: list[tuple[Callable[[], dict[str, str]], type[SoevError], str]] = [
    (system_headers, ArmError, "system"),
    (judge_config_headers, JudgeError, "judge"),
]


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


@pytest.mark.parametrize(
    ("environment", "tenant"),
    [({"TENANT": "gemeente-x", "KEY": "k1"}, "gemeente-x"), ({"KEY": "k1"}, "acme")],
    ids=["set", "unset-with-fallback"],
)
def test_the_system_and_the_judge_expand_a_header_template_alike(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], tenant: str
) -> None:
    monkeypatch.delenv("TENANT", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    system, judge = (_lower(build()) for build, _, _ in SIDES)

    assert system["x-tenant"] == judge["x-tenant"] == tenant
    assert system["x-key"] == judge["x-key"] == "k1"
    assert system["user-agent"] == judge["user-agent"] == USER_AGENT


@pytest.mark.parametrize(("build", "error", "section"), SIDES, ids=["system", "judge"])
def test_an_unset_variable_without_fallback_names_it_and_the_section(
    monkeypatch: pytest.MonkeyPatch,
    build: Callable[[], dict[str, str]],
    error: type[SoevError],
    section: str,
) -> None:
    monkeypatch.setenv("TENANT", "a-secret-value")
    monkeypatch.delenv("KEY", raising=False)

    with pytest.raises(error) as caught:
        build()

    assert str(caught.value) == (
        f"{section}.headers['X-Key'] uses ${{KEY}}, but the environment variable 'KEY' is not set"
    )


def test_the_client_joins_under_the_base_url_and_does_not_follow_redirects() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(302, headers={"Location": "http://elsewhere.invalid/"})

    config = JudgeConfig.model_validate({"base_url": "http://judge.test/v1", "model": "m"})

    async def main() -> httpx.Response:
        transport = httpx.MockTransport(handler)
        async with create_client(
            config, section="judge", error=JudgeError, transport=transport
        ) as client:
            assert client.timeout == httpx.Timeout(60.0, connect=10.0)
            return await client.post("chat/completions")

    assert asyncio.run(main()).status_code == 302
    assert [str(request.url) for request in seen] == ["http://judge.test/v1/chat/completions"]


async def _body() -> AsyncIterator[bytes]:
    """A body that streams, so that a response stays open until it is read or closed."""
    yield b"body"


class Script:
    """A MockTransport that answers from a list: a status, (status, headers), or an error."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls = 0
        self.responses: list[httpx.Response] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        return httpx.Response(status, headers=headers, content=_body())

    def run(self, rules: RetryRules, *, deadline_in: float | None = None, **options: Any) -> Sent:
        """Send through `send_with_retries`; `deadline_in` seconds from now is the deadline."""

        async def main() -> Sent:
            if deadline_in is not None:
                options["deadline"] = asyncio.get_running_loop().time() + deadline_in
            transport = httpx.MockTransport(self.handler)
            async with httpx.AsyncClient(base_url="http://s.test/", transport=transport) as http:

                async def send() -> httpx.Response:
                    response = await http.send(http.build_request("GET", "x"), stream=True)
                    self.responses.append(response)
                    return response

                options.setdefault("max_retries", 3)
                options.setdefault("policy", FAST)
                return await send_with_retries(send, rules=rules, **options)

        return asyncio.run(main())


@pytest.mark.parametrize("rules", [ARM_LIKE, JUDGE_LIKE], ids=["arm", "judge"])
def test_a_retryable_status_is_retried_until_it_succeeds(rules: RetryRules) -> None:
    script = Script(503, 200)

    sent = script.run(rules)

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 200
    assert (sent.retries, sent.retryable, script.calls) == (1, False, 2)


@pytest.mark.parametrize(("rules", "status"), [(ARM_LIKE, 500), (ARM_LIKE, 404), (JUDGE_LIKE, 400)])
def test_a_status_the_rules_do_not_retry_is_returned_at_once(
    rules: RetryRules, status: int
) -> None:
    script = Script(status, 200)

    sent = script.run(rules)

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == status
    assert (sent.retries, sent.retryable, script.calls) == (0, False, 1)
    assert not sent.last.is_closed


def test_the_last_retryable_failure_is_returned_after_the_retries() -> None:
    script = Script(503)

    sent = script.run(JUDGE_LIKE, max_retries=2)

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 503
    assert (sent.retries, sent.retryable, sent.refused_wait_s, script.calls) == (2, True, None, 3)


def test_every_response_that_is_not_returned_is_closed() -> None:
    script = Script(502, (429, {"Retry-After": "0"}), 200)

    sent = script.run(ARM_LIKE)

    assert [response.is_closed for response in script.responses] == [True, True, False]
    assert sent.last is script.responses[-1]


def test_a_long_retry_after_is_capped_when_the_rules_wait() -> None:
    script = Script((429, {"Retry-After": "3600"}), 200)
    waits: list[float] = []

    sent = script.run(ARM_LIKE, on_retry=lambda reason, retry, wait: waits.append(wait))

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 200
    assert waits == [FAST.retry_after_cap_s]


def test_a_long_retry_after_ends_the_retries_when_the_rules_give_up() -> None:
    script = Script((429, {"Retry-After": "3600"}), 200)

    sent = script.run(JUDGE_LIKE)

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 429
    assert (sent.retries, sent.retryable, sent.refused_wait_s) == (0, True, 3600.0)
    assert script.calls == 1


def test_a_retry_that_would_reach_the_deadline_is_not_tried() -> None:
    script = Script(503, 200)
    slow = RetryPolicy(backoff_s=5.0, backoff_cap_s=5.0)

    sent = script.run(ARM_LIKE, policy=slow, deadline_in=1.0)

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 503
    assert (sent.retries, sent.retryable, script.calls) == (0, True, 1)


def test_a_retryable_error_is_retried_and_the_last_one_returned() -> None:
    script = Script(httpx.ConnectError("refused"))

    sent = script.run(ARM_LIKE, max_retries=1)

    assert isinstance(sent.last, httpx.ConnectError)
    assert (sent.retries, sent.retryable, script.calls) == (1, True, 2)


def test_an_error_the_rules_do_not_retry_is_raised_at_once() -> None:
    script = Script(httpx.ReadTimeout("slow"), 200)

    with pytest.raises(httpx.ReadTimeout):
        script.run(ARM_LIKE)

    assert script.calls == 1


def test_the_slot_is_held_for_the_request_but_not_for_the_wait() -> None:
    script = Script(503, 200)
    slots = asyncio.Semaphore(1)
    held: list[bool] = []

    async def main() -> Sent:
        transport = httpx.MockTransport(script.handler)
        async with httpx.AsyncClient(base_url="http://s.test/", transport=transport) as http:

            async def send() -> httpx.Response:
                held.append(slots.locked())
                return await http.get("x")

            return await send_with_retries(
                send,
                rules=JUDGE_LIKE,
                policy=FAST,
                max_retries=3,
                slots=slots,
                on_retry=lambda reason, retry, wait: held.append(slots.locked()),
            )

    sent = asyncio.run(main())

    assert isinstance(sent.last, httpx.Response) and sent.last.status_code == 200
    assert held == [True, False, True]


def test_each_retry_is_reported_with_its_reason_number_and_wait() -> None:
    script = Script(503, httpx.ConnectError("refused"), 200)
    retries: list[tuple[str, int]] = []

    script.run(JUDGE_LIKE, on_retry=lambda reason, retry, wait: retries.append((reason, retry)))

    assert retries == [("HTTP 503", 1), ("ConnectError", 2)]


@pytest.mark.anyio
async def test_the_client_keeps_cookies_and_reads_only_the_responses_that_set_some(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("cookie"))
        if request.url.path == "/login":
            return httpx.Response(200, headers={"Set-Cookie": "session=abc; Path=/"})
        return httpx.Response(200)

    read: list[str] = []
    extract = httpx.Cookies.extract_cookies

    def noted(self: httpx.Cookies, response: httpx.Response) -> None:
        read.append(response.request.url.path)
        extract(self, response)

    monkeypatch.setattr(httpx.Cookies, "extract_cookies", noted)
    transport = httpx.MockTransport(handle)
    async with Client(transport=transport, base_url="http://localhost", cookies={"a": "1"}) as http:
        await http.get("/me")
        await http.get("/login")
        await http.get("/me")
        http.cookies = {}
        await http.get("/me")

    assert sent == ["a=1", "a=1", "a=1; session=abc", None]
    assert read == ["/login"]  # the jar is asked about the one response that set a cookie
