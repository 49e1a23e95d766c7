"""A cache of parsed suite files, so that a command on unchanged suites reads no YAML.

Parsing the YAML of a 20,000-case suite and validating its cases twice (as a suite file,
then as cases with the file's criteria) takes seconds; a command that loads the project
again, such as an offline rescore, spends them for nothing when no file changed. The cache
keeps the cases of each suite file as JSON, under `ProjectPaths.suite_cache`
(`<runs>/../.soev/cache/suites/`), one entry per suite file path:

    line 1   a header: {"format", "key", "source", "sha256", "shared"}
    line 2   the file's cases, `Case.model_dump(mode="json")` each, as one JSON array

An entry serves a file only when its key matches, and the key is the SHA-256 over
everything the parse depends on: the file's bytes, the suite name the project gives it,
and `code_version()` (the entry format, the versions of Python, pydantic, PyYAML and this
package, and the source of the modules that parse and validate a suite file). What depends
on the rest of the project is checked on every load, on cached cases as on parsed ones:
message codes, criterion parameters (the hooks module may register kinds), unique ids,
rubrics, the corpus and the seal. Cached cases have the digests parsed cases have: an entry
is written only when its JSON validates back to cases equal to those parsed.

The test split is sealed: its text lives in the suite files and the run archive, nowhere
else. So a file that holds a test case is never cached (its entry, if an older version
wrote one, is deleted), and an entry of another format, which may hold test cases, is
deleted when it is met. Keep test cases in files of their own to load the rest fast.

An entry is read as untrusted input. Only JSON is read, never pickle; a payload that does
not match the SHA-256 in its header (a truncated or garbled file), a header of another
format, or cases that do not validate make a miss, and the file is parsed and its entry
written again. An entry written on purpose, with a matching key and digest, is believed:
the folder is trusted as the runs and the project beside it are, and nothing in it is
ever executed. Writes go to a temporary file that replaces the entry in one step, so two
commands that write at once leave one whole entry. After a load that wrote an entry, the
entries of files that no longer exist are deleted: the cache holds at most one entry per
suite file on disk. Deleting the folder is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pydantic
import pydantic_core
import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

import soev_pipeline
from soev_pipeline.core.canonical import digest
from soev_pipeline.core.models import Case

FORMAT = 2
"""The layout of an entry; raise it when the header or the payload changes shape. (Entries
of format 1 could hold test cases.)"""

_SOURCES = (
    "soev_pipeline.core.models",
    "soev_pipeline.project.files",
    "soev_pipeline.project.loading",
    "soev_pipeline.project.suite_cache",
)
"""The modules whose code decides what a suite file parses to."""

_TEMPORARY_AGE_S = 3600.0
"""A temporary file older than this was left by a writer that crashed."""

_CASES: TypeAdapter[tuple[Case, ...]] = TypeAdapter(tuple[Case, ...])


@dataclass(frozen=True)
class SuiteFileCases:
    """The cases of one suite file, each with the file's shared criteria first.

    Attributes:
        cases: the cases, in file order, with `suite` set.
        shared: how many criteria at the start of each case's list the file shares.
    """

    cases: tuple[Case, ...]
    shared: int


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: int
    key: str
    source: str
    sha256: str
    shared: int = Field(ge=0)


@functools.cache
def code_version() -> str | None:
    """One digest of the code that parses a suite file; None when it cannot be read.

    Without it no entry is read or written: a change of the parsing code must never meet
    cases parsed by the old one.
    """
    sources: dict[str, str] = {}
    for name in _SOURCES:
        file = getattr(importlib.import_module(name), "__file__", None)
        if file is None:
            return None
        try:
            sources[name] = hashlib.sha256(Path(file).read_bytes()).hexdigest()
        except OSError:
            return None
    return digest(
        {
            "format": FORMAT,
            "python": list(sys.version_info[:2]),
            "soev-pipeline": soev_pipeline.__version__,
            "pydantic": pydantic.VERSION,
            "pydantic-core": pydantic_core.__version__,
            "pyyaml": yaml.__version__,
            "sources": sources,
        }
    )


class SuiteCache:
    """The cached suite files in `directory`: one entry per suite file path.

    Every failure to read or write an entry is a miss, never an error: the cache only
    saves time.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._wrote = False

    def key(self, data: bytes, suite: str) -> str | None:
        """The key of a suite file with the bytes `data` in the project's `suite`.

        None when the code version cannot be read: then the file is not cached.
        """
        code = code_version()
        if code is None:
            return None
        return digest({"code": code, "file": hashlib.sha256(data).hexdigest(), "suite": suite})

    def get(self, file: Path, key: str) -> SuiteFileCases | None:
        """The cases of `file` if its entry has `key` and is whole; None otherwise.

        An entry of another format is deleted: it may hold test cases.
        """
        entry = self._entry(file)
        try:
            with entry.open("rb") as stream:
                header = _Header.model_validate_json(stream.readline())
                if header.format != FORMAT:
                    entry.unlink()
                    return None
                if (header.key, header.source) != (key, str(file)):
                    return None
                payload = stream.read()
            if hashlib.sha256(payload).hexdigest() != header.sha256:
                return None
            return SuiteFileCases(_CASES.validate_json(payload), header.shared)
        except (OSError, ValueError):
            return None

    def put(self, file: Path, key: str, parsed: SuiteFileCases) -> None:
        """Write the entry of `file`, unless it holds a test case (then delete its entry) or
        its cases would not read back the same."""
        if any(case.split == "test" for case in parsed.cases):
            with contextlib.suppress(OSError):
                self._entry(file).unlink(missing_ok=True)
            return
        try:
            payload = _CASES.dump_json(parsed.cases)
            if _CASES.validate_json(payload) != parsed.cases:
                return
            header = _Header(
                format=FORMAT,
                key=key,
                source=str(file),
                sha256=hashlib.sha256(payload).hexdigest(),
                shared=parsed.shared,
            )
            self._write(self._entry(file), header.model_dump_json().encode() + b"\n" + payload)
        except (OSError, ValueError):
            return
        self._wrote = True

    def prune(self) -> None:
        """After a write: delete the entries of suite files that are gone, and unreadable
        entries, and the temporary files of writers that crashed."""
        if not self._wrote:
            return
        with contextlib.suppress(OSError):
            for path in self.directory.iterdir():
                with contextlib.suppress(OSError):
                    if path.suffix == ".tmp":
                        if time.time() - path.stat().st_mtime > _TEMPORARY_AGE_S:
                            path.unlink()
                    elif path.suffix == ".json" and not _source_exists(path):
                        path.unlink()

    def _entry(self, file: Path) -> Path:
        name = hashlib.sha256(str(file).encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.directory / f"{name}.json"

    def _write(self, entry: Path, content: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=entry.stem, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
            os.replace(temporary, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _source_exists(entry: Path) -> bool:
    """Whether the suite file of `entry` still exists; False for an unreadable entry or one
    of another format."""
    try:
        with entry.open("rb") as stream:
            header = _Header.model_validate_json(stream.readline())
    except ValueError:
        return False
    return header.format == FORMAT and Path(header.source).is_file()
