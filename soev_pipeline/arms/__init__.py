"""The systems under test: arms that run an attempt of a case and return its evidence.

`SoevThreadArm` speaks the soev chat-thread API (docs/systems.md#the-soev-thread-api);
`ChatCompletionsArm` any OpenAI-compatible `chat/completions` endpoint. Both take a client from
`create_http_client`; `create_arm` picks the arm that the project's `system.kind` names.
docs/systems.md describes how they speak, retry and record failures.
"""

from __future__ import annotations

import httpx

from soev_pipeline.core.http import RetryPolicy, retry_after_seconds
from soev_pipeline.core.project import Project

from .chat import ChatCompletionsArm
from .conversation import ConversationArm
from .http import create_http_client
from .sse import ServerSentEvent, SSEError, SSEParser, iter_events
from .thread import SoevThreadArm


def create_arm(
    http: httpx.AsyncClient, project: Project, *, retry: RetryPolicy | None = None
) -> SoevThreadArm | ChatCompletionsArm:
    """The arm for the project's system: its `kind`, its agent (else the project name).

    Raises:
        ArmError: the system lacks what its kind needs (a model for chat-completions).
    """
    if project.system.kind == "chat-completions":
        return ChatCompletionsArm(http, project.system, retry=retry)
    return SoevThreadArm(http, project.system, project.citations, agent=project.agent, retry=retry)


__all__ = [
    "ChatCompletionsArm",
    "ConversationArm",
    "RetryPolicy",
    "SSEError",
    "SSEParser",
    "ServerSentEvent",
    "SoevThreadArm",
    "create_arm",
    "create_http_client",
    "iter_events",
    "retry_after_seconds",
]
