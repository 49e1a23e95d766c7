"""soev-pipeline: an evaluation harness for chat assistants that answer Dutch legal questions.

Importing the package does no work: `__version__` is read on first use. When the package
is imported to run the command (`soev-evals`, `python -m soev_pipeline`), Ctrl-C ends the
command quietly from this first line on, until `soev_pipeline.cli.main` takes over:
importing the command line takes most of a second, and a Ctrl-C in that time would
otherwise print an import traceback.
"""

import sys as _sys

if _sys.orig_argv[1:3] == ["-m", "soev_pipeline"] or _sys.argv[0].endswith("soev-evals"):
    import _signal  # type: ignore[import-not-found]  # built in: loads nothing
    import os as _os

    def _interrupted_while_starting(signum, frame):  # type: ignore[no-untyped-def]
        _os.write(2, b"\ninterrupted\n")
        _os._exit(130)

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("soev-pipeline")
        except PackageNotFoundError:  # pragma: no cover - a source tree without an install
            return "0.0.0"
    raise AttributeError(f"module 'soev_pipeline' has no attribute {name!r}")
