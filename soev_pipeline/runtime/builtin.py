"""The built-in runtime provider, and the services it builds for both front ends.

The CLI and the Dagster assets get their arm and judge from here and nowhere else: the arm
for the project's `system` over one client of `create_http_client`, and the judge for its
`judge` section over the judge cache of the project's state.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

from soev_pipeline.arms import create_arm, create_http_client
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.ports import Arm, Judge
from soev_pipeline.core.proxies import EnvironmentProxies, ProxyConfigError
from soev_pipeline.core.secrets import redact_url
from soev_pipeline.judges import LLMJudge, open_judge
from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import JUDGE_CACHE, ProjectPaths

from .providers import Operation, RuntimeBindings


@asynccontextmanager
async def open_project_judge(
    loaded: LoadedProject, state: Path | None = None, *, offline: bool = False
) -> AsyncIterator[LLMJudge | None]:
    """The judge of the project's `judge:` section, open until the block ends; None without one.

    The judge the built-in provider gives, for a runtime provider of your own that brings
    its own arm or tracker but grades with the project's judge: the judge kinds of a
    provider that gives no judge have error verdicts. The judge cache is in `state`, the
    project's state folder (by default `.soev/` beside its runs, as `ProjectPaths` says).
    Offline, the judge answers from the cache alone and opens no client.

    Raises:
        JudgeError: the judge's client cannot be made (an unset `api_key_env`).
    """
    config = loaded.project.judge
    if config is None:
        yield None
        return
    folder = ProjectPaths.of(loaded.path).state if state is None else state
    async with open_judge(config, cache_path=folder / JUDGE_CACHE, offline=offline) as judge:
        yield judge


class BuiltinRuntime:
    """The built-in provider: an arm for the project's `system`, and a judge for its `judge`.

    The arm is a `SoevThreadArm` (or a `ChatCompletionsArm` for `kind: chat-completions`)
    over one client from `create_http_client`, opened once the system accepts connections
    (`check_reachable`); a rescore gets no arm. When the project has
    a `judge` section, the judge is an `LLMJudge` over an OpenAI-compatible adapter with
    the judge cache in `state_dir` (default: `.soev/` beside the project's runs).
    """

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir

    @asynccontextmanager
    async def _bindings(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AsyncIterator[RuntimeBindings]:
        project = loaded.project
        state = self.state_dir or ProjectPaths.of(loaded.path).state
        async with AsyncExitStack() as stack:
            arm: Arm | None = None
            if operation == "run":
                # fail fast, before a run is archived, when nothing listens at base_url
                await asyncio.to_thread(check_reachable, loaded)
                http = await stack.enter_async_context(create_http_client(project.system))
                arm = create_arm(http, project)
            judge: Judge | None = await stack.enter_async_context(open_project_judge(loaded, state))
            yield RuntimeBindings(arm=arm, judge=judge)

    def open(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AbstractAsyncContextManager[RuntimeBindings]:
        return self._bindings(loaded, operation=operation)


def check_reachable(loaded: LoadedProject, timeout: float = 3.0) -> None:
    """Fail fast with one line when the system under test does not accept connections.

    When the environment sends the system's requests through a proxy (`core.proxies`),
    the proxy is what must accept them: behind a corporate proxy the system itself may
    not even resolve.

    Raises:
        ArmError: no connection opens to `system.base_url` (or to its proxy); the message
            names the project file, with credentials redacted.
    """
    url = loaded.project.system.url
    try:
        proxy = EnvironmentProxies.read().for_url(url)
    except ProxyConfigError as exc:
        raise ArmError(f"{loaded.path}: system.base_url: {exc}") from None
    parts = urlsplit(proxy or url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if proxy is not None:
            raise ArmError(
                f"{loaded.path}: system.base_url: cannot reach the proxy {redact_url(proxy)} "
                f"that the environment names for {redact_url(url)} ({reason})"
            ) from None
        raise ArmError(
            f"{loaded.path}: system.base_url: cannot reach {redact_url(url)} ({reason}); "
            "is the system under test running?"
        ) from None
