"""Safe, bounded reading of YAML and JSON input files.

Files are read whole only below a size limit. YAML is parsed with the safe loader (libyaml's
when PyYAML has it) after a pass over its events that bounds nesting depth, aliases and the
node count with aliases expanded, so a small file cannot expand into a huge document or a
deep one; a value its tag cannot construct (`!!int 1.5`, `!!timestamp soon`, a 5,000-digit
integer) is a one-line error with its line. JSON gets the same depth and node bounds. Every
failure is an InputError naming the file, and the line where the parser knows it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from llm_inventory.bounds import (
    DOCUMENT_DEPTH,
    DOCUMENT_NODES,
    FILE_BYTES,
    YAML_ALIASES,
)
from llm_inventory.errors import InputError, excerpt

T = TypeVar("T")

MAX_FILE_BYTES = FILE_BYTES
MAX_ALIASES = YAML_ALIASES

# libyaml's loader (in PyYAML's standard wheels) reads ~8× as fast as the pure-Python one.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeLoader = SAFE_LOADER
# Errors SafeConstructor lets out when a value does not fit its tag: int("1.5"),
# bool_values["24"], a timestamp regex that does not match, int() past 4,300 digits …
_TAG_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError, IndexError)


class _TagErrors:
    """Tag-construction errors reported at their node (mixed into a safe loader)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)  # type: ignore[misc]
        except _TAG_ERRORS as exc:
            value = node.value if isinstance(node, yaml.ScalarNode) else type(node).__name__
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None, None,
                f"{tag} value {excerpt(value)} cannot be read as that type "
                f"({type(exc).__name__})",
                node.start_mark,
            ) from exc


class _Loader(_TagErrors, _SafeLoader):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's when available), tag errors reported at their node."""


class _WordyLoader(_TagErrors, yaml.SafeLoader):
    """The pure-Python safe loader: a malformed file is read again by it for its wording
    (libyaml's is terse: "did not find expected key")."""


def reading(function: Callable[..., T]) -> Callable[..., T]:
    """Make every way reading an input can fail one InputError naming it (the first argument):
    a file-system error (a 1 MB name is ENAMETOOLONG), undecodable text, nesting too deep for
    a parser, or memory running out on a huge file."""

    @functools.wraps(function)
    def guarded(source: Any, *args: Any, **kwargs: Any) -> T:
        label = str(source)
        try:
            return function(source, *args, **kwargs)
        except InputError:
            raise
        except OSError as exc:
            raise InputError(label, f"cannot be read: {exc.strerror or exc}") from exc
        except UnicodeError as exc:
            raise InputError(label, f"is not readable text: {exc}") from exc
        except RecursionError as exc:
            raise InputError(label, "nests too deeply to read") from exc
        except MemoryError as exc:
            raise InputError(label, "is too large to read into memory") from exc

    return guarded


def read_text(path: Path, *, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text, refusing missing files, folders, huge files and non-UTF-8 bytes.

    Read through files.read_bounded, the one safe open: opened without blocking, so a FIFO
    nobody writes to reads as empty instead of hanging (process substitution, <(…), still
    works), and never more than `limit` bytes, whatever the file claims."""
    from llm_inventory.files import read_bounded

    label = str(path)
    data = read_bounded(path, limit, regular=False)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(label, f"is not UTF-8 text (byte {exc.start})") from exc


def _check_events(text: str, label: str) -> None:
    """Bound depth, aliases and expanded nodes from the event stream, before any node is
    built (the event stream is flat: no recursion, no tree in memory)."""
    sizes: dict[str, tuple[int, int]] = {}  # anchor → (expanded nodes, depth)
    open_: list[list[Any]] = []  # per open collection: [nodes, depth below, anchor]
    total = aliases = 0

    def close(nodes: int, depth: int, anchor: str | None) -> None:
        if anchor is not None:
            sizes[anchor] = (nodes, depth)
        if open_:
            open_[-1][0] += nodes
            open_[-1][1] = max(open_[-1][1], depth)

    for event in yaml.parse(text, _SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise InputError(label, f"uses more than {MAX_ALIASES} YAML aliases")
            nodes, depth = sizes.get(event.anchor or "", (1, 1))
            total += nodes
            if len(open_) + depth > DOCUMENT_DEPTH:
                raise InputError(label, f"nests deeper than {DOCUMENT_DEPTH} levels once its "
                                 "aliases are expanded")
            close(nodes, depth, None)
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            close(1, 1, event.anchor)
        elif isinstance(event, yaml.CollectionStartEvent):
            total += 1
            open_.append([1, 0, event.anchor])
            if len(open_) > DOCUMENT_DEPTH:
                mark = event.start_mark
                where = f" (line {mark.line + 1})" if mark else ""
                raise InputError(label, f"nests deeper than {DOCUMENT_DEPTH} levels{where}")
        elif isinstance(event, yaml.CollectionEndEvent) and open_:
            nodes, depth, anchor = open_.pop()
            close(nodes, depth + 1, anchor)
        if total > DOCUMENT_NODES:
            raise InputError(label, f"holds more than {DOCUMENT_NODES:,} YAML nodes (aliases "
                             "expanded); input documents are limited to that")


def parse_yaml(text: str, label: str) -> Any:
    """Parse YAML text safely, within the depth, alias and node bounds."""
    try:
        _check_events(text, label)
        return yaml.load(text, _Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        error = exc
        if _Loader is not _WordyLoader:
            try:
                yaml.load(text, _WordyLoader)  # noqa: S506 - a SafeLoader subclass
            except yaml.MarkedYAMLError as wordy:
                error = wordy
            except RecursionError:  # the pure-Python parser recurses on deep nesting
                raise InputError(label, "nests too deeply to read") from exc
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InputError(label, f"malformed YAML at {where}{error.problem}") from exc
    except yaml.YAMLError as exc:
        raise InputError(label, f"malformed YAML: {exc}") from exc
    except RecursionError as exc:  # not reached within DOCUMENT_DEPTH; kept as a backstop
        raise InputError(label, "nests too deeply to read") from exc


def _check_tree(data: Any, label: str) -> None:
    """Bound a parsed JSON document's depth and node count, without recursion."""
    stack = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > DOCUMENT_NODES:
            raise InputError(label, f"holds more than {DOCUMENT_NODES:,} JSON values; input "
                             "documents are limited to that")
        if depth > DOCUMENT_DEPTH:
            raise InputError(label, f"nests deeper than {DOCUMENT_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def loads_json(text: str | bytes, label: str, what: str = "JSON") -> Any:
    """`json.loads`, with every way it fails as one InputError (no depth or node bound)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            label, f"malformed {what} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise InputError(label, f"malformed {what}: nests too deeply to read") from exc
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise InputError(label, f"malformed {what}: an integer has more than 4,300 "
                         "digits") from exc


def parse_json(text: str, label: str) -> Any:
    """Parse JSON text, within the depth and node bounds."""
    data = loads_json(text, label)
    _check_tree(data, label)
    return data


def load_mapping(path: Path, *, limit: int = MAX_FILE_BYTES) -> dict[str, Any]:
    """Load a YAML or JSON file whose top level must be a mapping."""
    text = read_text(path, limit=limit)
    label = str(path)
    data = parse_json(text, label) if path.suffix == ".json" else parse_yaml(text, label)
    if not isinstance(data, dict):
        raise InputError(label, f"expected a mapping at the top level, got {type(data).__name__}")
    return data


def item_lines(text: str, key: str) -> list[int]:
    """The 1-based line where each item of the top-level `key` list starts, for messages
    and annotations that point at an entry; [] when the document has no such list. Call it
    on text `parse_yaml` has already read (and so bounded)."""
    try:
        node = yaml.compose(text, _Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return []
    if not isinstance(node, yaml.MappingNode):
        return []
    for name, value in node.value:
        if isinstance(name, yaml.ScalarNode) and name.value == key \
                and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []
