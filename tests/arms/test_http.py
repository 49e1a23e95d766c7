"""The client of the system under test, and the retry timing rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from soev_pipeline.arms import RetryPolicy, create_http_client, retry_after_seconds
from soev_pipeline.core.errors import ArmError
from tests.support.builders import system_config

pytestmark = pytest.mark.anyio


async def test_the_client_joins_paths_under_the_base_url() -> None:
    config = system_config("http://127.0.0.1:9/soev", timeout_s=30, concurrency=5)
    async with create_http_client(config) as http:
        request = http.build_request("POST", "v1/chat/threads")
        assert str(request.url) == "http://127.0.0.1:9/soev/v1/chat/threads"
        assert http.timeout.connect == 10.0
        assert http.timeout.read == 30.0
        assert "authorization" not in http.headers


async def test_a_short_turn_timeout_also_shortens_the_connect_timeout() -> None:
    async with create_http_client(system_config("http://127.0.0.1:9/", timeout_s=2)) as http:
        assert (http.timeout.connect, http.timeout.read) == (2.0, 2.0)


async def test_the_bearer_token_and_headers_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOKEN_VAR", "abc")
    monkeypatch.setenv("SUBJECT", "svc")
    config = system_config(
        "http://127.0.0.1:9/",
        api_key_env="TOKEN_VAR",
        headers={"X-Soev-Subject": "${SUBJECT}:${SUBJECT}", "X-Plain": "$HOME {x}"},
    )
    async with create_http_client(config) as http:
        assert http.headers["authorization"] == "Bearer abc"
        assert http.headers["x-soev-subject"] == "svc:svc"
        assert http.headers["x-plain"] == "$HOME {x}"


def test_an_unset_token_variable_is_an_arm_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    config = system_config("http://127.0.0.1:9/", api_key_env="NO_SUCH_TOKEN")
    with pytest.raises(ArmError, match="'NO_SUCH_TOKEN'"):
        create_http_client(config)


def test_an_unset_header_variable_is_an_arm_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_SUCH_HEADER_VAR", raising=False)
    config = system_config("http://127.0.0.1:9/", headers={"X-A": "${NO_SUCH_HEADER_VAR}"})
    with pytest.raises(ArmError, match=r"X-A.*'NO_SUCH_HEADER_VAR'"):
        create_http_client(config)


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert (
        retry_after_seconds(format_datetime(now + timedelta(seconds=42), usegmt=True), now=now)
        == 42.0
    )
    assert (
        retry_after_seconds(format_datetime(now - timedelta(seconds=5), usegmt=True), now=now)
        == 0.0
    )
    for invalid in (None, "", "soon", "-1"):
        assert retry_after_seconds(invalid) is None


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    policy = RetryPolicy(backoff_s=1.0, backoff_cap_s=5.0)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        waits = {policy.backoff(retry) for _ in range(50)}
        assert all(ceiling / 2 <= wait <= ceiling for wait in waits)
        assert len(waits) > 1
