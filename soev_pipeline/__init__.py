"""soev-pipeline: an evaluation harness for chat assistants that answer Dutch legal questions."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("soev-pipeline")
except PackageNotFoundError:  # pragma: no cover - a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]
