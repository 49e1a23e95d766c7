"""The `soev-evals` console script: Ctrl-C is one clear line from the first instant.

Importing the command line takes most of a second (pydantic, httpx, Dagster). A Ctrl-C in
that time would print an import traceback, so this module, which imports nothing heavy,
catches it first; once the command runs, `soev_pipeline.cli.main` handles it.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import NoReturn

EXIT_INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("\ninterrupted\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def run() -> NoReturn:
    """Start the command with Ctrl-C ending it quietly (exit 130) until it is ready."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    from soev_pipeline.cli.main import run as main

    main(restore_sigint=True)
