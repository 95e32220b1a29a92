"""Write a result to stdout as a table, JSON or YAML.

JSON and YAML are the pydantic result dumped as it is (exact integers, stable keys); the
table is built by a command-specific function and printed with Rich (markup off, in colour
only on a terminal and never with NO_COLOR set) at a width that cuts no number or
identifier (`render/fit.py`). A table's warnings go to stderr; JSON and YAML keep them in
the document.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
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
) -> None:
    """Print `result` in `fmt`; `table` builds the human view only when it is asked for."""
    if fmt is OutputFormat.JSON:
        sys.stdout.write(json.dumps(dump(result), indent=2) + "\n")
    elif fmt is OutputFormat.YAML:
        import yaml

        sys.stdout.write(yaml.safe_dump(dump(result), sort_keys=False, allow_unicode=True))
    else:
        from llm_inventory.render.fit import Diagnostic, data_console, print_parts

        rendered = table()
        parts = list(rendered) if isinstance(rendered, Sequence) else [rendered]
        print_parts(data_console(), [p for p in parts if not isinstance(p, Diagnostic)])
        sys.stdout.flush()
        for part in parts:
            if isinstance(part, Diagnostic):
                warn(part.plain)


def warn(message: str) -> None:
    """A warning on stderr, one line, never on stdout."""
    sys.stderr.write(f"inventory: warning: {message}\n")


def note(message: str) -> None:
    """A note on stderr (what the result assumed), one line, never on stdout."""
    sys.stderr.write(f"inventory: note: {message}\n")
