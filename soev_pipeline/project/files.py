"""Reading the files a user writes, safely: text, YAML and paths inside the project.

Every file a project names may be huge, cut, not UTF-8 or hostile. The rules here hold
for all of them:
- text must be UTF-8; otherwise the error names the file and the byte offset;
- YAML is read with the safe loader, a mapping may not repeat a key, and aliases may not
  expand the document past `MAX_YAML_VALUES` values (an alias bomb of a few KB would
  otherwise expand to gigabytes), nor refer to themselves;
- a YAML file may not be larger than `MAX_YAML_BYTES`;
- a path in a project file is relative to the project directory and, once symlinks are
  resolved, must lie inside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from soev_pipeline.core.errors import ProjectError

MAX_YAML_BYTES = 64 * 1024 * 1024
MAX_YAML_VALUES = 1_000_000
"""The most values (scalars, lists and mappings, counted as if aliases were copied) that a
YAML file may expand to: far above any real suite, far below what exhausts memory."""

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


class YAMLFileError(yaml.MarkedYAMLError):
    """A YAML file that the safe rules refuse: too big, not UTF-8, a repeated key, an alias bomb."""


class _Loader(_BASE):  # type: ignore[valid-type, misc]
    """The safe loader (LibYAML's when PyYAML has it), refusing repeated mapping keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                continue  # an unhashable key: the constructor itself refuses it
            if repeated:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {seen[key]})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def decode(data: bytes, path: Path) -> str:
    """`data` as UTF-8 text (a leading byte-order mark dropped).

    Raises:
        ProjectError: the bytes are not UTF-8; the message names the file and the offset.
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ProjectError(
            f"{path}: byte {exc.start}: not UTF-8 text ({exc.reason}); save the file as UTF-8"
        ) from None


def read_text(path: Path) -> str:
    """Read a text file of the project as UTF-8.

    Raises:
        OSError: the file cannot be read.
        ProjectError: it is not UTF-8 text.
    """
    return decode(path.read_bytes(), path)


def _expanded_size(root: Node) -> int:
    """How many values `root` holds when every alias is copied out; stops past the limit.

    Raises:
        YAMLFileError: the values pass `MAX_YAML_VALUES`, or an alias holds itself.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    aliased = False
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            aliased = aliased or len({id(child) for child in children}) < len(children)
            total = 1 + sum(sizes[id(child)] for child in children)
            if total > MAX_YAML_VALUES:
                problem = (
                    f"aliases expand this document to more than {MAX_YAML_VALUES:,} values"
                    if aliased
                    else f"the file holds more than {MAX_YAML_VALUES:,} values; a suite this "
                    "large goes in several files that the suite's glob finds"
                )
                raise YAMLFileError(problem=problem, problem_mark=node.start_mark)
            sizes[key] = total
            continue
        if key in sizes:
            aliased = True
            continue
        if key in active:
            raise YAMLFileError(
                problem="an alias refers to a value that holds it", problem_mark=node.start_mark
            )
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise YAMLFileError(
                    problem="an alias refers to a value that holds it",
                    problem_mark=child.start_mark,
                )
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _named(mark: Any, path: Path) -> yaml.Mark | None:
    """The same place in the file, named by its path rather than `<unicode string>`."""
    if mark is None:
        return None
    return yaml.Mark(str(path), mark.index, mark.line, mark.column, None, None)  # type: ignore[arg-type]


def load_yaml(path: Path) -> Any:
    """Read a YAML file of the project under the safe rules above; None for an empty file.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: it is not valid YAML, or the rules refuse it (`YAMLFileError`);
            `problem_mark` gives the line where there is one.
    """
    return parse_yaml(read_yaml_bytes(path), path)


def read_yaml_bytes(path: Path) -> bytes:
    """The bytes of a YAML file of the project, read once so a cache can key on them.

    Raises:
        OSError: the file cannot be read.
        YAMLFileError: it is larger than `MAX_YAML_BYTES`.
    """
    with path.open("rb") as stream:
        data = stream.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise YAMLFileError(
            problem=f"the file is larger than {MAX_YAML_BYTES} bytes, the most a YAML file may have"
        )
    return data


def parse_yaml(data: bytes, path: Path) -> Any:
    """Parse the bytes of the YAML file `path` under the safe rules above, as `load_yaml` does.

    Raises:
        yaml.YAMLError: as `load_yaml`.
    """
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise YAMLFileError(
            problem=f"byte {exc.start}: not UTF-8 text ({exc.reason}); save the file as UTF-8"
        ) from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        exc.problem_mark, exc.context_mark = (
            _named(exc.problem_mark, path),
            _named(exc.context_mark, path),
        )
        raise
    finally:
        loader.dispose()


def inside(directory: Path, relative: str | Path, *, field: str, source: Path) -> Path:
    """The path `relative` names in the project `directory`, refused when it leads outside.

    The path is joined to the directory and resolved, symlinks included; the result must
    be the directory or lie below it.

    Raises:
        ProjectError: it is absolute or leads outside the project directory; the message
            names the file that gave the path (`source`) and its `field`.
    """
    root = directory.resolve()
    if Path(relative).is_absolute():
        raise ProjectError(
            f"{source}: {field}: {str(relative)!r} is an absolute path; paths in a project are "
            "relative to the project directory"
        )
    resolved = (root / relative).resolve()
    if resolved != root and root not in resolved.parents:
        raise ProjectError(
            f"{source}: {field}: {str(relative)!r} leads outside the project directory {root}"
        )
    return resolved
