"""Secrets read for requests are redacted from everything recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.http import request_headers
from soev_pipeline.core.project import SystemConfig
from soev_pipeline.core.secrets import REDACTED, forget_secrets, redact, register_secret


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
