"""The small exception hierarchy the library raises; the CLI maps it to exit codes."""

from __future__ import annotations


class InventoryError(Exception):
    """Base class of every error the library raises on purpose."""


class InputError(InventoryError):
    """Bad input: a value, file or name the tool cannot use. The CLI exits 2.

    `field` names what was wrong (a flag, a file and key path, a model field) so the one-line
    message can point at it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class CheckFailed(InventoryError):
    """A check the user asked for did not pass (`--max-bytes`, `--require-fit`). Exit 1."""
