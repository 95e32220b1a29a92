"""Turn pydantic validation errors into one InputError line: `file: field.path: message`."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from llm_inventory.errors import InputError, excerpt

if TYPE_CHECKING:
    from pydantic import ValidationError


# Errors about a value's size or range, whose message does not say what the value was.
_RANGE_ERRORS = {"less_than_equal", "less_than", "greater_than_equal", "greater_than",
                 "string_too_long", "string_too_short"}


def _path(error: Any) -> str:
    parts = (str(part) if len(str(part)) <= 60 else excerpt(str(part)) for part in error["loc"])
    return ".".join(parts) or "(top level)"


def from_validation(exc: ValidationError, label: str) -> InputError:
    """The most telling error (and how many more), with its field path, as one line.

    A misspelt key shows up twice, as an unknown key and as a missing one: the unknown key
    is reported first, with the missing name it most resembles.
    """
    errors = sorted(exc.errors(include_url=False),
                    key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    path = _path(first)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key (check the spelling; `inventory schema` lists every key)"
        parent, key = first["loc"][:-1], str(first["loc"][-1])
        missing = [str(e["loc"][-1]) for e in errors
                   if e["type"] == "missing" and e["loc"][:-1] == parent]
        close = difflib.get_close_matches(key, missing, n=1)
        if close:
            message = f"unknown key (did you mean {close[0]!r}?)"
    elif first["type"] in _RANGE_ERRORS:
        message = f"{message}, got {excerpt(first.get('input'))}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return InputError(f"{label}: {path}" if label else path, f"{message}{more}")
