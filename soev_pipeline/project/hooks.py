"""Import a project's hooks module, and say in one line where it failed.

The hooks module is the user's own code: it may not import, raise while it runs, or call
`sys.exit()`. Each such failure becomes a `ProjectError` that names the hooks file and the
line (`hooks.py:12: hooks: ValueError: ...`), and only a failure that comes from the hooks
module is reported as one.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType

from soev_pipeline.core.errors import HooksError
from soev_pipeline.text import shorten


@contextmanager
def _on_path(directory: Path) -> Iterator[None]:
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        with suppress(ValueError):
            sys.path.remove(str(directory))


def _in_project(filename: str, directory: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(directory.resolve())
    except (OSError, ValueError):
        return False


def _place(exc: BaseException, directory: Path) -> str | None:
    """`file:line` of the deepest frame of `exc`'s traceback in the project directory."""
    if isinstance(exc, SyntaxError) and exc.filename and _in_project(exc.filename, directory):
        return f"{exc.filename}:{exc.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if _in_project(frame.filename, directory)
    ]
    if not frames:
        return None
    return f"{frames[-1].filename}:{frames[-1].lineno}"


def import_hooks(name: str, directory: Path, *, project_file: Path) -> ModuleType:
    """Import the hooks module `name` afresh from the project `directory`.

    Any module of the same top-level name is dropped first, so a second project with a
    module called `hooks`, or an edited hooks file, is never served from the import cache.

    Raises:
        HooksError: the module is not in the project, or its code failed while it was
            imported (also by `sys.exit()` or a failed import of its own); the message
            names the hooks file and the line.
    """
    top = name.split(".")[0]
    for loaded in [key for key in sys.modules if key == top or key.startswith(top + ".")]:
        del sys.modules[loaded]
    importlib.invalidate_caches()
    message: str | None = None
    with _on_path(directory):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (exc.name == name or name.startswith(exc.name + ".")):
                message = (
                    f"{project_file}: hooks: no module {name!r} in the project directory "
                    f"{directory}"
                )
            else:
                message = _failed(exc, directory, name)
        except (Exception, SystemExit) as exc:  # the user's code, whatever it raised
            message = _failed(exc, directory, name)
    raise HooksError(message)


def _failed(exc: BaseException, directory: Path, name: str) -> str:
    place = _place(exc, directory) or f"hooks module {name!r}"
    if isinstance(exc, SystemExit):
        return f"{place}: hooks: the module called sys.exit({exc.code!r}) while it was imported"
    if isinstance(exc, SyntaxError):
        return f"{place}: hooks: SyntaxError: {exc.msg}"
    detail = " ".join(str(exc).split())
    return f"{place}: hooks: {type(exc).__name__}: {shorten(detail, 300)}".rstrip(": ")
