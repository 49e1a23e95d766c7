"""The one line of an error, also when it comes wrapped in an exception group."""

from __future__ import annotations

import asyncio
import errno

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.explain import explain, is_user_error, unwrap


def test_the_error_of_a_task_group_is_the_one_explained() -> None:
    full = OSError(errno.ENOSPC, "No space left on device", "runs/r1/evidence.jsonl")
    group = BaseExceptionGroup(
        "unhandled errors in a TaskGroup",
        [asyncio.CancelledError(), ExceptionGroup("inner", [RuntimeError("bug"), full])],
    )
    assert unwrap(group) is full
    assert is_user_error(group)
    assert explain(group) == "runs/r1/evidence.jsonl: No space left on device"


def test_without_a_users_error_the_first_that_is_not_a_cancellation_is_chosen() -> None:
    bug = RuntimeError("bug")
    assert unwrap(BaseExceptionGroup("g", [asyncio.CancelledError(), bug])) is bug
    assert explain(ExceptionGroup("g", [bug])) == "internal error: RuntimeError: bug"
    cancelled = asyncio.CancelledError()
    assert unwrap(BaseExceptionGroup("g", [cancelled])) is cancelled
    plain = ProjectError("p.yaml: name: missing")
    assert unwrap(plain) is plain
