"""soev-pipeline: an evaluation harness for chat assistants that answer Dutch legal questions.

Importing the package does no work: `__version__` is read on first use, so that the
command line can take over Ctrl-C before anything heavy is imported.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("soev-pipeline")
        except PackageNotFoundError:  # pragma: no cover - a source tree without an install
            return "0.0.0"
    raise AttributeError(f"module 'soev_pipeline' has no attribute {name!r}")
