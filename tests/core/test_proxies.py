"""Proxies from the environment: which request goes through which proxy, and the system's
client, the judge's client and the reachability check sending through a real local proxy."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from soev_pipeline.arms import SoevThreadArm, create_http_client
from soev_pipeline.cli import load
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.ports import JudgeRequest
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.core.proxies import EnvironmentProxies, ProxyConfigError, bypassed
from soev_pipeline.core.secrets import REDACTED, forget_secrets, redact
from soev_pipeline.judges import open_judge
from soev_pipeline.runtime import check_reachable
from tests.support.builders import FAST_RETRY, conversation, system_config
from tests.support.chat_completions import FakeChatCompletions
from tests.support.project import write_project
from tests.support.proxy import ForwardProxy
from tests.support.thread_api import FakeThreadAPI

NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
CLOSED = "http://127.0.0.1:9"
"""A port where nothing listens."""


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    forget_secrets()
    yield
    forget_secrets()


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy() as running:
        yield running


class TestWhichProxy:
    def test_by_scheme_then_all(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://secure.proxy:3128")
        monkeypatch.setenv("all_proxy", "proxy.corp:8080")
        proxies = EnvironmentProxies.read()
        assert proxies.for_url("https://soev.example/v1/") == "http://secure.proxy:3128"
        assert proxies.for_url("http://soev.example/v1/") == "http://proxy.corp:8080"

    def test_none_without_the_variables(self) -> None:
        assert EnvironmentProxies.read().for_url("http://soev.example/") is None

    @pytest.mark.parametrize(
        ("host", "no_proxy", "bypass"),
        [
            ("soev.example", "soev.example", True),
            ("api.soev.example", ".soev.example", True),
            ("api.soev.example:8443", "soev.example", True),
            ("notsoev.example", "soev.example", False),
            ("127.0.0.1:8765", "localhost, 127.0.0.1", True),
            ("127.0.0.1:8765", "127.0.0.1:9999", False),
            ("127.0.0.1:8765", "127.0.0.1:8765", True),
            ("anything", "*", True),
            ("soev.example", "", False),
        ],
    )
    def test_no_proxy(self, host: str, no_proxy: str, bypass: bool) -> None:
        assert bypassed(host, no_proxy) is bypass

    def test_a_socks_proxy_is_refused_and_credentials_are_secrets(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTP_PROXY", "socks5://user:geheim-proxy-1@proxy:1080")
        with pytest.raises(ProxyConfigError, match=r"HTTP_PROXY is a socks5:// proxy"):
            EnvironmentProxies.read()
        assert redact("geheim-proxy-1") == REDACTED
        with pytest.raises(ArmError, match="socks5"):
            create_http_client(system_config("http://127.0.0.1:9/"))


def test_the_systems_requests_go_through_the_proxy(
    proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)

    async def attempt(system: FakeThreadAPI) -> str | None:
        config = system_config(system.url)
        async with create_http_client(config) as http:
            arm = SoevThreadArm(http, config, retry=FAST_RETRY)
            evidence = await arm.attempt(conversation("Een", "Twee"), attempt=0, fields={})
        assert evidence.failure is None
        return evidence.reply

    with FakeThreadAPI() as system:
        assert asyncio.run(attempt(system)) == "antwoord 2 op Twee"
        origin = system.url.rstrip("/")
        assert proxy.seen == [
            f"POST {origin}/v1/chat/threads",
            f"POST {origin}/v1/chat/threads/thread-1/inputs",
            f"DELETE {origin}/v1/chat/threads/thread-1",
        ]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        asyncio.run(attempt(system))
        assert len(proxy.seen) == 3  # straight to the system


def test_the_judges_requests_go_through_the_proxy(
    proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    request = JudgeRequest(task="privacy.names", inputs={"text": "x"}, allowed_labels=("none",))

    async def judge(url: str) -> str:
        config = JudgeConfig(base_url=url, model="judge-model", cache=False)
        async with open_judge(config, cache_path=None) as opened:
            return (await opened.judge(request)).label

    with FakeChatCompletions() as server:
        assert asyncio.run(judge(server.url)) == "none"
    assert proxy.seen == [f"POST {server.url}chat/completions"]


def test_the_reachability_check_asks_the_proxy(
    proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Behind a proxy, the system may not be reachable directly: the proxy must be."""
    project = load(write_project(tmp_path, f"{CLOSED}/"))
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    check_reachable(project)
    monkeypatch.setenv("HTTP_PROXY", "http://user:proxy-pass-99@127.0.0.1:9")
    with pytest.raises(ArmError) as raised:
        check_reachable(project)
    message = str(raised.value)
    assert f"cannot reach the proxy http://user:{REDACTED}@127.0.0.1:9 that the" in message
    assert "proxy-pass-99" not in message
