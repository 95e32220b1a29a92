"""Write a result to stdout as a table, JSON or YAML.

JSON and YAML are the pydantic result dumped as it is (exact integers, stable keys); the
table is built by a command-specific function and printed with Rich (markup off, in colour
only on a terminal and never with NO_COLOR set) at a width that cuts no number or
identifier (`render/fit.py`), or, where a command offers it and it covers the output, as
the same text without importing Rich (`render/plain.py`). A table's warnings go to stderr;
JSON and YAML keep them in the document.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import RenderableType


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


class Units(StrEnum):
    IEC = "iec"
    SI = "si"


Result = Union["BaseModel", Sequence["BaseModel"], dict[str, Any]]


def dump(result: Result) -> Any:
    """The JSON-ready form of a result (or a list of results); a dict already is one (a
    fast path's `model_dump(mode="json")`, built without the model)."""
    if isinstance(result, dict):
        return result
    if not isinstance(result, Sequence):
        return result.model_dump(mode="json")
    return [item.model_dump(mode="json") for item in result]


def emit(
    result: Result,
    fmt: OutputFormat,
    table: Callable[[], RenderableType | Sequence[RenderableType]],
    plain: Callable[[Any], str | None] | None = None,
) -> None:
    """Print `result` in `fmt`; `table` builds the human view only when it is asked for.
    `plain(stream)`, when given, is the same view as text printed without Rich
    (`render/plain.py`), or None where it does not cover the output."""
    if fmt is OutputFormat.JSON:
        sys.stdout.write(json_text(dump(result)) + "\n")
    elif fmt is OutputFormat.YAML:
        import yaml

        sys.stdout.write(yaml.safe_dump(dump(result), sort_keys=False, allow_unicode=True))
    elif plain is not None and (text := plain(sys.stdout)) is not None:
        sys.stdout.write(printable(text, sys.stdout))
        sys.stdout.flush()
    else:
        from llm_inventory.render.fit import Diagnostic, data_console, print_parts

        rendered = table()
        parts = list(rendered) if isinstance(rendered, Sequence) else [rendered]
        console = data_console()
        # Rendered to a string and written here, so that text the stream cannot encode
        # (a lone surrogate from a model file) is replaced, and a closed pipe raises
        # BrokenPipeError to the CLI's error boundary (Rich would exit 1 itself).
        with console.capture() as captured:
            print_parts(console, [p for p in parts if not isinstance(p, Diagnostic)])
        sys.stdout.write(printable(captured.get(), sys.stdout))
        sys.stdout.flush()
        for part in parts:
            if isinstance(part, Diagnostic):
                warn(part.plain)


def printable(text: str, stream: Any) -> str:
    """`text` with what `stream`'s encoding cannot write (lone surrogates …) replaced."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "replace").decode(encoding)
    except LookupError:
        return text
    return text


def json_text(data: Any) -> str:
    """`json.dumps(data, indent=2)`, byte for byte, about 1.6 times as fast, and always
    valid JSON: a NaN or infinity (which JSON cannot spell) is written as null.

    With an indent the standard library encodes in pure Python through nested generators;
    this walks the document once, appending pieces, and leaves every scalar to the same
    functions (`encode_basestring_ascii`, `int.__repr__`, `float.__repr__`). Anything but
    the JSON types (a non-string key, an unknown object) goes to `json.dumps` itself.
    """
    parts: list[str] = []
    try:
        _walk(data, "\n", parts.append)
    except _NotPlain:  # never NaN or Infinity: allow_nan=False refuses rather than write them
        return json.dumps(data, indent=2, allow_nan=False)
    return "".join(parts)


class _NotPlain(Exception):
    """A value `_walk` leaves to the standard library."""


def _walk(value: Any, pad: str, out: Callable[[str], None]) -> None:
    # Each container's separators are made once and appended as they are: the pieces list
    # holds references, not a new string per item.
    if isinstance(value, str):
        out(encode_basestring_ascii(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, int):
        out(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            out("null")  # JSON has no NaN or infinity (RFC 8259): no finite figure is null
        else:
            out(float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out("{}")
            return
        inner = pad + "  "
        opening, separator = "{" + inner, "," + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotPlain
            out(opening)
            opening = separator
            out(encode_basestring_ascii(key))
            out(": ")
            _walk(item, inner, out)
        out(pad + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out("[]")
            return
        inner = pad + "  "
        opening, separator = "[" + inner, "," + inner
        for item in value:
            out(opening)
            opening = separator
            _walk(item, inner, out)
        out(pad + "]")
    else:
        raise _NotPlain


def warn(message: str) -> None:
    """A warning on stderr, one line, never on stdout."""
    sys.stderr.write(f"inventory: warning: {message}\n")


def note(message: str) -> None:
    """A note on stderr (what the result assumed), one line, never on stdout."""
    sys.stderr.write(f"inventory: note: {message}\n")
