"""Files a user names on the command line (`--junit FILE`, `--html FILE`), written safely."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from .errors import ProjectError


def replace_file(path: Path, write: Callable[[Path], object], *, option: str) -> Path:
    """Write `path` atomically: `write` fills a temporary file beside it, which then replaces
    it. Returns the path written.

    A path that exists must be a regular file: a directory, a device (`/dev/stdout`, a
    disk) or a FIFO is refused, never replaced or written into. A missing folder is made
    (a CI job's `artifacts/`). When `write` fails, no temporary file is left behind.

    Raises:
        ProjectError: the path, or a folder on its way, is not what it must be; the
            message names the option.
    """
    path = Path(path)
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise ProjectError(f"{option} {path}: not a regular file; give the path of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ProjectError(f"{option} {path}: {path.parent} is not a folder") from None
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path
