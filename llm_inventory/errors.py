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


EXCERPT_CHARS = 40  # as bounds.EXCERPT: a value quoted in an error line stays this short


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A value as an error line quotes it: its repr, cut to `limit` characters with its size.

    `'aaaa…' (100,000 characters)`; an integer of more than `limit` digits by its length
    (Python will not print one past 4,300 digits); containers shortened as reprlib does.
    """
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return _integer(value, limit)
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    import reprlib

    class Short(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            return _integer(x, limit)

    shorten = Short()
    shorten.maxstring = shorten.maxother = limit
    shorten.maxlevel, shorten.maxlist, shorten.maxdict, shorten.maxtuple = 3, 6, 4, 6
    try:
        text = shorten.repr(value)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    if len(text) > 2 * limit:
        text = text[: 2 * limit] + "…"
    sized = isinstance(value, list | tuple | dict | set | bytes) and "..." in text
    return f"{text} ({len(value):,} entries)" if sized else text  # type: ignore[arg-type]


def _integer(value: int, limit: int) -> str:
    bits = value.bit_length()
    if bits < 3 * limit:  # at most ~0.9 × limit digits: short enough to print
        return repr(value)
    sign = "negative " if value < 0 else ""
    if bits < 14_000:  # below Python's 4,300-digit printing limit
        return f"a {sign}{len(str(abs(value))):,}-digit integer"
    return f"a {sign}{int(bits * 0.30103) + 1:,}-digit integer"
