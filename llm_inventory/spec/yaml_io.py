"""Safe, bounded reading of YAML and JSON input files.

Files are read whole only below a size limit; YAML is parsed with the safe loader and a cap on
aliases (so a small file cannot expand into a huge document); every failure is an InputError
naming the file, and the line where the parser knows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from llm_inventory.errors import InputError

MAX_FILE_BYTES = 4 * 2**20
MAX_ALIASES = 64
# libyaml's parser (in PyYAML's standard wheels) reads the bundled catalog ~8× faster than
# the pure-Python one, with the same safe constructor; a PyYAML built without it falls back.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: Path, *, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text, refusing missing files, folders, huge files and non-UTF-8 bytes."""
    label = str(path)
    try:
        if not path.exists():
            raise InputError(label, "no such file")
        if path.is_dir():
            raise InputError(label, "is a folder, expected a file")
        size = path.stat().st_size
        if size > limit:
            raise InputError(label, f"is {size:,} bytes; input files are limited to {limit:,}")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(label, f"cannot be read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(label, f"is not UTF-8 text (byte {exc.start})") from exc


def parse_yaml(text: str, label: str) -> Any:
    """Parse YAML text safely; aliases are capped at MAX_ALIASES."""
    try:
        return _load(text, label, SAFE_LOADER)
    except yaml.YAMLError as exc:
        if SAFE_LOADER is yaml.SafeLoader:
            raise _malformed(label, exc) from exc
    # libyaml words its errors tersely ("did not find expected key"); the pure-Python parser
    # reports the same place in full, so a malformed file is read again by it.
    try:
        return _load(text, label, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise _malformed(label, exc) from exc


def _load(text: str, label: str, loader: type[yaml.SafeLoader]) -> Any:
    # Every alias starts with `*`: text without one needs no counting pass.
    if "*" in text:
        aliases = sum(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, loader))
        if aliases > MAX_ALIASES:
            raise InputError(label, f"uses {aliases} YAML aliases; at most {MAX_ALIASES} allowed")
    return yaml.load(text, Loader=loader)


def _malformed(label: str, exc: yaml.YAMLError) -> InputError:
    """A YAML error as an InputError naming the file and, where known, the place."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return InputError(label, f"malformed YAML at {where}{exc.problem}")
    return InputError(label, f"malformed YAML: {exc}")


def parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            label, f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc


def load_mapping(path: Path, *, limit: int = MAX_FILE_BYTES) -> dict[str, Any]:
    """Load a YAML or JSON file whose top level must be a mapping."""
    text = read_text(path, limit=limit)
    label = str(path)
    data = parse_json(text, label) if path.suffix == ".json" else parse_yaml(text, label)
    if not isinstance(data, dict):
        raise InputError(label, f"expected a mapping at the top level, got {type(data).__name__}")
    return data
