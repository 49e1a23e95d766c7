"""create_arm: the arm of the project's system kind, with its agent and citation field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from soev_pipeline.arms import ChatCompletionsArm, SoevThreadArm, create_arm
from soev_pipeline.core.errors import ArmError
from soev_pipeline.core.ports import Arm
from soev_pipeline.core.project import Project

pytestmark = pytest.mark.anyio


def project(**system: Any) -> Project:
    return Project.model_validate(
        {
            "name": "wetwijzer",
            "system": {"base_url": "http://127.0.0.1:9/", **system},
            "citations": {"source_field": "url"},
            "suites": [{"name": "kern", "files": "suites/*.yaml"}],
        }
    )


async def test_create_arm_follows_the_system_kind() -> None:
    async with httpx.AsyncClient() as http:
        thread = create_arm(http, project())
        assert isinstance(thread, SoevThreadArm)
        assert isinstance(thread, Arm)
        assert thread.agent == "wetwijzer"  # the project name stands in for system.agent
        assert thread.source_field == "url"
        named = create_arm(http, project(agent="wijzer"))
        assert isinstance(named, SoevThreadArm)
        assert named.agent == "wijzer"

        chat = create_arm(http, project(kind="chat-completions", model="m"))
        assert isinstance(chat, ChatCompletionsArm)
        assert isinstance(chat, Arm)
        with pytest.raises(ArmError):
            create_arm(http, project(kind="chat-completions"))
