"""The `soev-evals` console script: Ctrl-C is one clear line from the first instant.

Importing the command line takes most of a second (pydantic, httpx, Dagster). A Ctrl-C in
that time would print an import traceback, so this module takes over SIGINT before it
imports anything: `_signal` and `os` are built into the interpreter and already loaded.
Once the command runs, `soev_pipeline.cli.main` handles Ctrl-C itself.
"""

import _signal  # type: ignore[import-not-found]  # the C module under `signal`
import os


def _interrupted_while_starting(signum, frame):  # type: ignore[no-untyped-def]
    os.write(2, b"\ninterrupted\n")
    os._exit(130)


if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)


def run() -> None:
    """Start the command; Ctrl-C ends it quietly (exit 130) until it is ready."""
    from soev_pipeline.cli.main import run as main

    main(restore_sigint=True)
