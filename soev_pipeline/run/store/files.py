"""Reading and writing the files of a run archive on a local disk, safely.

Every store keeps a run's files in a local folder while a command works on them (the
local store: the archive itself; the object store: its cache), so these helpers serve both.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from soev_pipeline.core.chars import scrub
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.models import Evidence
from soev_pipeline.core.secrets import redact

MAX_JSON_BYTES = 64 * 1024 * 1024
"""The largest `manifest.json` or `report.json` that is read: a manifest of a million
cases takes a tenth of it; a larger one was not written by a run."""
_EVIDENCE_HEAD = re.compile(
    rb'\{"case_id":"([^"\\]+)","suite":"[^"\\]*","split":"[a-z]+","attempt":(\d+),'
)
"""The start of an evidence line as `Evidence.model_dump_json` writes it: its case and attempt
are read without decoding the rest."""


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Give an `OSError` without a file name (a full disk on write, say) the name of `path`."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def json_text(value: Any) -> str:
    """`value` as the archive writes JSON: indented, secrets redacted, lone surrogates
    replaced (so that it can be written), ending with a newline."""
    return redact(scrub(json.dumps(value, indent=2, ensure_ascii=False))) + "\n"


def write_text_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename."""
    temporary = path.with_name(path.name + ".tmp")
    with naming(path):
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)


def write_json_atomically(path: Path, value: Any) -> None:
    """Write `value` as indented JSON (`json_text`) to `path` through a temporary file and a
    rename."""
    write_text_atomically(path, json_text(value))


def check_regular(path: Path, *, max_bytes: int | None = None) -> None:
    """Refuse a file of the archive that is not a regular file, or is larger than `max_bytes`.

    A FIFO or a device in the place of an archive file would block the reader or never end;
    a huge file would fill the memory. Only tampering puts them there.

    Raises:
        ProjectError: one line naming the file and what is wrong with it.
    """
    with naming(path):
        info = path.stat()
    _check_stat(path, info, max_bytes)


def _check_stat(path: Path, info: os.stat_result, max_bytes: int | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ProjectError(f"{path}: not a regular file; a run archive holds only files")
    if max_bytes is not None and info.st_size > max_bytes:
        raise ProjectError(
            f"{path}: {info.st_size} bytes, more than the {max_bytes} such a file may have"
        )


def open_regular(path: Path, *, max_bytes: int | None = None) -> IO[bytes]:
    """Open a file of the archive for reading, refusing what `check_regular` refuses.

    The file is opened without blocking and checked through its descriptor, so a FIFO is
    refused at once, and a file swapped after a check cannot slip past it.

    Raises:
        ProjectError: the file is not a regular file, or is too large.
        OSError: it cannot be opened (with its name).
    """
    with naming(path):
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check_stat(path, os.fstat(descriptor), max_bytes)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_json_file(path: Path, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value of an archive file, read as `open_regular` allows.

    Raises:
        ProjectError: the file is refused (see `open_regular`) or is not UTF-8 JSON.
        OSError: it cannot be read.
    """
    with open_regular(path, max_bytes=max_bytes) as file, naming(path):
        data = file.read()
    try:
        return json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError too
        raise ProjectError(f"{path}: not a JSON file ({type(exc).__name__})") from None


def parses(line: bytes) -> bool:
    try:
        Evidence.model_validate_json(line)
    except ValidationError:
        return False
    return True


def evidence_key(line: bytes) -> tuple[str, int] | None:
    """(case id, attempt) of an evidence line; None for one that does not read."""
    head = _EVIDENCE_HEAD.match(line)
    if head is not None:
        return head.group(1).decode("utf-8", "replace"), int(head.group(2))
    try:
        raw = json.loads(line)
        return str(raw["case_id"]), int(raw.get("attempt", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def drop_broken_last_line(path: Path) -> None:
    """Cut a last line that a crash left cut short, or that does not decode or parse.

    So appends start clean after a crash. Only the last line is looked at: a broken line
    in the middle is an error that reading reports (see `RunArchive.iter_evidence`).
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as file:
        size = file.seek(0, os.SEEK_END)
        end = size
        file.seek(size - 1)
        if file.read(1) == b"\n":
            end = size - 1
        position, start = end, 0
        block = 65536
        while position > 0:
            low = max(0, position - block)
            file.seek(low)
            newline = file.read(position - low).rfind(b"\n")
            if newline != -1:
                start = low + newline + 1
                break
            position = low
        file.seek(start)
        last = file.read(size - start)
        if last.endswith(b"\n") and (not last.strip() or parses(last)):
            return
        file.truncate(start)
