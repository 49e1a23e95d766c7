"""What a step shows when it fails for the user's files or systems, or is terminated: the
one line the CLI prints, as the description of a `dagster.Failure`, and no traceback of
ours."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from soev_pipeline.core.explain import explain, is_user_error

INTERRUPTED = (
    "interrupted: every attempt that finished is archived; re-execute this run (or launch "
    "`evaluate` on its partition) to run the rest"
)


def _interruption(exc: BaseException) -> bool:
    """Whether `exc` is (or holds, from a task group) the interruption of a terminated run."""
    if isinstance(exc, dg.DagsterExecutionInterruptedError | KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_interruption(inner) for inner in exc.exceptions)
    return False


@contextmanager
def one_line_errors(project_file: Path | str = "project.yaml") -> Iterator[None]:
    """Turn a user error raised in the block into a `Failure` with its one-line message, and
    a terminated run's interruption into one that says how to go on.

    Bugs (anything else) keep their traceback, which is what a bug report needs.
    """
    try:
        yield
        return
    except dg.Failure:
        raise
    except BaseException as exc:
        if _interruption(exc):
            message = INTERRUPTED
        elif isinstance(exc, Exception) and is_user_error(exc):
            message = explain(exc, project_file)
        else:
            raise
    # raised outside the handler, so that no chained exception carries a traceback of ours
    raise dg.Failure(description=message, allow_retries=False)
