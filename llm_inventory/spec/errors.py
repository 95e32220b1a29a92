"""Turn pydantic validation errors into one InputError line: `file: field.path: message`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_inventory.errors import InputError

if TYPE_CHECKING:
    from pydantic import ValidationError


def from_validation(exc: ValidationError, label: str) -> InputError:
    """The first error (and how many more), with its field path, as one line."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    path = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key (check the spelling; `inventory schema` lists every key)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return InputError(f"{label}: {path}" if label else path, f"{message}{more}")
