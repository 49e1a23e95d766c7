"""Files a user names on the command line (`--junit FILE`, `--html FILE`), written safely.

An output flag writes where it is told, so a slip of the keyboard or a planted link must
not cost data: the path may not be a symbolic link, nor lie in a place that holds the
project's data (the run archive, project.yaml and the files it names), and the file is
replaced whole by a rename, never written into.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from .errors import OutputPathError


class Owned(NamedTuple):
    """A file or folder that holds someone's data, which no output flag may replace.

    Attributes:
        path: the file, or the folder whose every file is owned.
        what: what it is, for the message: `the runs folder`, `the project file`.
    """

    path: Path
    what: str


def replace_file(
    path: Path,
    write: Callable[[Path], object],
    *,
    option: str,
    owned: Iterable[Owned] = (),
) -> Path:
    """Write `path` atomically: `write` fills a new temporary file beside it, which then
    replaces it. Returns the path written.

    A path that exists must be a regular file and not a symbolic link: a directory, a device
    (`/dev/stdout`, a disk), a FIFO or a link is refused, never replaced or written into or
    through. A path that is one of `owned`, or lies in an owned folder (once the links of
    its folders are resolved), is refused too. A missing folder is made (a CI job's
    `artifacts/`). The temporary file is created anew (never opened through a link planted
    under its name), and when `write` fails it is removed.

    Raises:
        OutputPathError: the path, or a folder on its way, is not what it must be, or it
            is owned; the message names the option.
    """
    path = check_output(path, option=option, owned=owned)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputPathError(f"{option} {path}: {path.parent} is not a folder") from None
    temporary = _new_temporary(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def check_output(path: Path, *, option: str, owned: Iterable[Owned] = ()) -> Path:
    """Refuse an output path that `replace_file` would refuse, before any work is done;
    return it absolute (its links not resolved).

    Raises:
        OutputPathError: as `replace_file`.
    """
    path = Path(path).absolute()
    _check_not_owned(path, owned, option)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise OutputPathError(f"{option} {path}: {path.parent} is not a folder") from None
    if mode is not None and stat.S_ISLNK(mode):
        raise OutputPathError(
            f"{option} {path}: is a symbolic link; an output is never written through a "
            "link (it could replace the file it points to): give the path of a file"
        )
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputPathError(
            f"{option} {path}: not a regular file; give the path of a file to write"
        )
    return path


def _check_not_owned(path: Path, owned: Iterable[Owned], option: str) -> None:
    """Refuse `path` when it is, or lies in, one of `owned`: compared where the file would
    land, its folders' links resolved (the file itself is never followed)."""
    landing = path.parent.resolve() / path.name
    for entry in owned:
        target = entry.path.resolve()
        if landing == target or target in landing.parents:
            inside = "is" if landing == target else "lies in"
            raise OutputPathError(
                f"{option} {path}: {inside} {entry.what} ({target}); an output flag never "
                "replaces the project's data: write the file elsewhere"
            )


def _new_temporary(path: Path) -> Path:
    """A new, empty file beside `path`, made with O_EXCL so that nothing already there (a
    link planted under a guessable name) is opened."""
    for _ in range(100):
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(descriptor)
        return temporary
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))
