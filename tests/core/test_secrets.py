"""Secrets read for requests are redacted from everything recorded."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import request_headers
from soev_pipeline.core.project import SystemConfig
from soev_pipeline.core.secrets import (
    REDACTED,
    forget_secrets,
    redact,
    redact_url,
    register_secret,
)


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def test_a_registered_secret_is_redacted_in_every_form() -> None:
    secret = 's3cr3t"tok\\en-é'
    register_secret(secret)
    assert redact(f"key {secret} here") == f"key {REDACTED} here"
    for ascii_only in (True, False):
        line = json.dumps({"detail": f"echo: {secret}"}, ensure_ascii=ascii_only)
        assert redact(line) == json.dumps({"detail": f"echo: {REDACTED}"})


def test_short_values_are_not_secrets() -> None:
    register_secret("abc")
    assert redact("abc") == "abc"


def test_the_token_and_env_header_values_become_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOEV_TEST_TOKEN", "tok-1234567")
    monkeypatch.setenv("SOEV_TEST_TENANT", "tenant-998877")
    system = SystemConfig(
        base_url="http://127.0.0.1:9/",
        api_key_env="SOEV_TEST_TOKEN",
        headers={"X-Tenant": "${SOEV_TEST_TENANT}", "X-Plain": "zichtbaar-123"},
    )
    request_headers(system, section="system", error=ArmError)
    text = "Bearer tok-1234567 for tenant-998877 and zichtbaar-123"
    assert redact(text) == f"Bearer {REDACTED} for {REDACTED} and zichtbaar-123"


KEY = "sk-Live_0123456789abcdef"


class TestEveryForm:
    """An echo of the key in any form an attacker or a bug may give it."""

    @pytest.fixture(autouse=True)
    def _key(self) -> None:
        register_secret(KEY)

    @pytest.mark.parametrize(
        "echo",
        [
            KEY.upper(),
            KEY.lower(),
            KEY.swapcase(),
            base64.b64encode(KEY.encode()).decode(),
            base64.urlsafe_b64encode(b"\xfb\xff" + KEY.encode()).decode(),
            base64.b64encode(f"admin:{KEY}".encode()).decode(),
            base64.b64encode(f"ab:{KEY}:x".encode()).decode().rstrip("="),
            quote(f"k={KEY}&", safe=""),
            quote(KEY, safe="").lower(),
            KEY.encode().hex(),
            KEY.encode().hex().upper(),
            json.dumps(json.dumps({"k": KEY})),
        ],
    )
    def test_the_echo_is_redacted(self, echo: str) -> None:
        line = redact(f"echo: {echo} .")
        assert REDACTED in line
        assert KEY.casefold() not in line.casefold()

    @given(
        before=st.binary(max_size=5),
        after=st.binary(max_size=5),
        urlsafe=st.booleans(),
    )
    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def test_base64_at_any_alignment_is_redacted(
        self, before: bytes, after: bytes, urlsafe: bool
    ) -> None:
        encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
        encoded = encode(before + KEY.encode() + after).decode()
        assert REDACTED in redact(encoded)

    def test_a_key_cut_by_a_shortened_text_loses_its_start_too(self) -> None:
        for kept in (4, 10, len(KEY) - 1):
            assert redact(f"detail {KEY[:kept]}…") == f"detail {REDACTED}…"
        assert redact("sk-L is not cut") == "sk-L is not cut"
        assert redact("short sk-…") == "short sk-…"  # three characters prove nothing


def test_each_variable_of_a_header_template_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOEV_TEST_USER", "gebruiker-42")
    monkeypatch.setenv("SOEV_TEST_PASS", "wachtwoord-77")
    system = SystemConfig(
        base_url="http://127.0.0.1:9/",
        headers={"X-Auth": "Token ${SOEV_TEST_USER}:${SOEV_TEST_PASS}"},
    )
    request_headers(system, section="system", error=ArmError)
    assert redact("user gebruiker-42, pass WACHTWOORD-77") == f"user {REDACTED}, pass {REDACTED}"


def test_the_credentials_of_a_base_url_are_secrets() -> None:
    system = SystemConfig(
        base_url="https://svc-user:p%40ss-w0rd!@soev.example/api/?api_key=q-key-123456&lang=nl"
    )
    request_headers(system, section="system", error=ArmError)
    assert redact("p@ss-w0rd! svc-user q-key-123456") == f"{REDACTED} {REDACTED} {REDACTED}"
    shown = redact_url(str(system.base_url))
    assert shown == f"https://{REDACTED}:{REDACTED}@soev.example/api/?api_key={REDACTED}&lang=nl"
    forget_secrets()
    shown = redact_url("http://bob:hunter2hunter@host:81/v1/?sig=abcdef&x=1")
    assert shown == f"http://bob:{REDACTED}@host:81/v1/?sig={REDACTED}&x=1"
    assert redact_url("http://host/plain/") == "http://host/plain/"


def test_redacting_text_with_a_lone_surrogate_replaces_it() -> None:
    register_secret(KEY)
    assert redact(f"{KEY} \ud800") == f"{REDACTED} \ufffd"
