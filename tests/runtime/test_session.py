"""RuntimeSession: one provider per command, none at all for an offline rescore."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.cli import ProjectError, load
from soev_pipeline.judges import LLMJudge
from soev_pipeline.runtime import RuntimeSession
from tests.support.project import write_project


@pytest.fixture
def session() -> RuntimeSession:
    return RuntimeSession()


def test_an_offline_session_opens_no_provider_only_the_judge_of_the_cache(
    tmp_path: Path, session: RuntimeSession
) -> None:
    loaded = load(write_project(tmp_path, "http://127.0.0.1:9/", "http://127.0.0.1:9/v1/"))
    try:
        opened = session.run(
            session.bindings(loaded, "geen-runtime", "rescore", tmp_path / ".soev", offline=True)
        )
        again = session.run(session.bindings(loaded, "builtin", "run", tmp_path / ".soev"))
    finally:
        session.close()
    assert opened.arm is None and isinstance(opened.judge, LLMJudge)
    assert again is opened


def test_a_provider_that_does_not_exist_stops_the_session(
    tmp_path: Path, session: RuntimeSession
) -> None:
    loaded = load(write_project(tmp_path, "http://127.0.0.1:9/"))
    try:
        with pytest.raises(ProjectError, match="geen-runtime"):
            session.run(session.bindings(loaded, "geen-runtime", "run", tmp_path / ".soev"))
    finally:
        session.close()
