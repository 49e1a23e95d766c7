"""soev-pipeline: an evaluation harness for chat assistants that answer Dutch legal questions.

    from soev_pipeline import evaluate
    report = evaluate("project.yaml", k=3)

Importing the package does no work: `__version__` and the API load on first use. When the
package is imported to run the command (`soev-evals`, `python -m soev_pipeline`), Ctrl-C
(and SIGTERM, SIGHUP) ends the command quietly from this first line on, until
`soev_pipeline.cli.main` takes over: importing the command line takes most of a second,
and a Ctrl-C in that time would otherwise print an import traceback.
"""

import sys as _sys

if _sys.orig_argv[1:3] == ["-m", "soev_pipeline"] or _sys.argv[0].endswith("soev-evals"):
    import _signal  # type: ignore[import-not-found]  # built in: loads nothing
    import os as _os

    def _interrupted_while_starting(signum, frame):  # type: ignore[no-untyped-def]
        names = {_signal.SIGTERM: b"SIGTERM", _signal.SIGHUP: b"SIGHUP"}
        said = b"stopped by " + names[signum] if signum in names else b"interrupted"
        _os.write(2, b"\n" + said + b"\n")
        _os._exit(128 + signum)

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    for _signum in (_signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(_signum) == _signal.SIG_DFL:
            _signal.signal(_signum, _interrupted_while_starting)

from typing import Any  # after the guard, which must come first

__all__ = [
    "Evaluation",
    "LoadedProject",
    "Progress",
    "Report",
    "__version__",
    "evaluate",
    "evaluate_run",
    "load",
    "rescore",
    "rescore_run",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use so that `import soev_pipeline` stays cheap."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("soev-pipeline")
        except PackageNotFoundError:  # pragma: no cover - a source tree without an install
            return "0.0.0"
    if name in {"Evaluation", "evaluate", "evaluate_run", "rescore", "rescore_run"}:
        from . import api

        return getattr(api, name)
    if name in {"LoadedProject", "load"}:
        from . import project

        return getattr(project, name)
    if name == "Progress":
        from .run.progress import Progress

        return Progress
    if name == "Report":
        from .run.results import Report

        return Report
    raise AttributeError(f"module 'soev_pipeline' has no attribute {name!r}")
