"""Tables printed without Rich, byte for byte as `render/fit.py` prints them through Rich.

Importing Rich costs a script that calls `inventory kv` in a loop more than the rest of the
command, and a small fixed table needs little of it. This module covers one case: plain
text (no escape codes) of single-width characters, made of text lines and tables whose
columns never wrap (every column whole, as `fit_table` pins them), in Rich's default
`HEAVY_HEAD` box with one space of padding, no optional columns. It answers None, and the
caller prints through Rich, for anything else:
- a stream Rich treats as a terminal (styles become escape codes; the terminal's width),
  by Rich's rule (`Console.is_terminal`): TTY_COMPATIBLE, then FORCE_COLOR, then `isatty()`;
- Jupyter, IDLE and Windows (Rich has rules of its own for each);
- a stream whose encoding is not UTF (Rich draws the box in ASCII);
- a character other than printable ASCII, "·" and "×" (wide, combining, control …);
- a table with a prose column (`fold`, Rich's `overflow="fold"`) wider than the width:
  Rich wraps that column's cells.

The width is `output_width`'s: COLUMNS when set, else the widest table's own width, between
80 and 160. A table wider than that is printed whole at its own width; a text line wraps
at it as Rich's `Text.wrap` does (`rich/_wrap.py`, `divide_line`: words with their
trailing spaces, a word longer than the line folded, spaces beyond the width dropped).
`tests/render/test_plain.py` holds this module to Rich for random tables, texts and widths.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from llm_inventory.bounds import env_columns

FALLBACK_WIDTH = 80
WIDEST_FALLBACK = 160

# Every character here is one cell wide in Rich (`rich.cells.cell_len`).
_NARROW = re.compile(r"[ -~·×]*")
_WORD = re.compile(r"\s*\S+\s*")


class PlainTable:
    """Headers, each column's justification ("left" or "right"), whether it is prose that
    may wrap (`fold`), and rows of strings."""

    __slots__ = ("fold", "headers", "justify", "rows")

    def __init__(self, headers: Sequence[str], justify: Sequence[str],
                 fold: Sequence[bool] = ()) -> None:
        self.headers = list(headers)
        self.justify = list(justify)
        self.fold = list(fold) or [False] * len(self.headers)
        self.rows: list[list[str]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def widths(self) -> list[int]:
        """Each column's width: its widest cell, header included (padding excluded)."""
        return [max(len(cell) for cell in column)
                for column in zip(self.headers, *self.rows, strict=True)]

    def width(self) -> int:
        """Cells, one space either side of each, and the borders."""
        widths = self.widths()
        return sum(widths) + 3 * len(widths) + 1

    def lines(self) -> list[str]:
        widths = self.widths()

        def rule(left: str, fill: str, cross: str, right: str) -> str:
            return left + cross.join(fill * (w + 2) for w in widths) + right

        def row(cells: Sequence[str], edge: str) -> str:
            padded = (cell.rjust(w) if justify == "right" else cell.ljust(w)
                      for cell, w, justify in zip(cells, widths, self.justify, strict=True))
            return edge + edge.join(f" {cell} " for cell in padded) + edge

        return [rule("┏", "━", "┳", "┓"), row(self.headers, "┃"), rule("┡", "━", "╇", "┩"),
                *(row(cells, "│") for cells in self.rows), rule("└", "─", "┴", "┘")]


def wrap(text: str, width: int) -> list[str]:
    """`text` (one line) wrapped at `width` cells as Rich wraps a `Text`."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # no line holds it: fold it, `width` cells a piece
            pieces = [word[i:i + width] for i in range(0, len(word), width)] or [word]
            for piece in pieces:
                if start:
                    breaks.append(start)
                start += len(piece)
            offset = len(pieces[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    lines = [text[a:b] for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True)]
    return [_fit(line, width) for line in lines]


def _fit(line: str, width: int) -> str:
    """Spaces past `width` dropped, then the line cut at `width` (`rstrip_end`, `truncate`)."""
    if len(line) > width:
        spaces = len(line) - len(line.rstrip())
        line = line[:len(line) - min(spaces, len(line) - width)]
    return line[:width]


def render(parts: Sequence[str | PlainTable], stream: Any) -> str | None:
    """`parts` (text lines and tables) as `print_parts` prints them to `stream`, or None
    when this module does not cover the case (see its docstring)."""
    if not _plain_stream(stream):
        return None
    for part in parts:
        texts = [part] if isinstance(part, str) else [*part.headers, *sum(part.rows, [])]
        if not all(_NARROW.fullmatch(text) for text in texts):
            return None
    tables = [part for part in parts if isinstance(part, PlainTable)]
    columns = env_columns()  # bounded: a 5,000-digit COLUMNS is one line, exit 2
    if columns is not None:
        width = columns
    else:
        natural = max((table.width() for table in tables), default=FALLBACK_WIDTH)
        width = max(FALLBACK_WIDTH, min(natural, WIDEST_FALLBACK))
    if any(any(table.fold) and table.width() > width for table in tables):
        return None
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out += wrap(part, width)
        else:
            out += part.lines()
    return "".join(line + "\n" for line in out)


def _plain_stream(stream: Any) -> bool:
    """Whether Rich would write `stream` as plain text: not a terminal (`Console.is_terminal`),
    not Jupyter or IDLE or Windows, a UTF encoding (`Console.encoding`)."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    if (getattr(sys.stdin, "__module__", None) or "").startswith("idlelib"):
        return False
    stream = getattr(stream, "rich_proxied_file", stream)
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    if not encoding.startswith("utf"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force == ""
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is None or not isatty()
    except ValueError:
        return True
