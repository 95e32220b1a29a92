"""Print tables at the width they are given without cutting a number or an identifier.

Rich shrinks every column of a table that is wider than the console and ends the cut cells
with "…" (`32,4…`, `h100-s…`). Here a column is prose only when it says so
(`overflow="fold"`: it wraps, and folds a word longer than the column); every other column
holds numbers or identifiers and never wraps. A cell may be a `Text` with `no_wrap=True` to
keep it whole inside a prose column. When a table still does not fit, its optional columns
are dropped in the order it names them, and if it is still too wide it is printed wider
than the console rather than cut.

The width: a terminal's own (Rich reads it, and COLUMNS when set); else COLUMNS; else, for
a pipe, a file or a CI log (where Rich would fall back to 80), the width the widest table
needs, between 80 and 160 columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Column
from rich.table import Table as RichTable
from rich.text import Text

from llm_inventory.bounds import env_columns
from llm_inventory.render.plain import FALLBACK_WIDTH, WIDEST_FALLBACK


class Table(RichTable):
    """A Rich table that names the columns it can do without, least needed first."""

    def __init__(self, *args: Any, optional: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.optional = tuple(optional)


class Diagnostic(Text):
    """A warning that belongs on stderr, not beside the table it was found with."""


class Footnote(Text):
    """A line explaining one column of the table before it; left out with that column."""

    def __init__(self, text: str, *, column: str, **kwargs: Any) -> None:
        super().__init__(text, **kwargs)
        self.column = column


def is_prose(column: Column) -> bool:
    return column.overflow == "fold" and not column.no_wrap


def _plain_width(cell: RenderableType | None) -> int:
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = cell
    else:
        return 0
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _whole(cells: Iterable[RenderableType], prose: bool) -> int:
    """The width the column's unbreakable cells (header included) need."""
    widths = [_plain_width(cell) for cell in cells
              if not prose or (isinstance(cell, Text) and cell.no_wrap)]
    return max(widths, default=0)


def _needed(console: Console, table: RichTable) -> int:
    wide = console.options.update_width(10_000)
    return Measurement.get(console, wide, table).minimum


def fit_table(console: Console, table: RichTable, width: int) -> tuple[int, list[str]]:
    """Pin the table's number and identifier columns whole, drop optional columns while it
    is wider than `width`; return the width to print it at (≥ `width`) and the headers of
    the columns dropped."""
    for column in table.columns:
        prose = is_prose(column)
        if not prose:
            column.no_wrap = True
        whole = _whole([column.header, *column.cells], prose)
        if whole:
            column.min_width = max(column.min_width or 0, whole)
    needed = _needed(console, table)
    dropped: list[str] = []
    for header in getattr(table, "optional", ()):
        if needed <= width:
            break
        table.columns = [c for c in table.columns if c.header != header]
        for index, column in enumerate(table.columns):
            column._index = index
        dropped.append(header)
        needed = _needed(console, table)
    width = max(width, needed)
    _share_out(console, table, width)
    return width, dropped


def _share_out(console: Console, table: RichTable, width: int) -> None:
    """Give each prose column at least its minimum when the table must wrap.

    Rich narrows the widest wrapping columns first without looking at their minimums, so a
    prose column holding whole cells could end up narrower than they are. When that would
    happen, each prose column gets clamp(level, its minimum, its maximum), the level as high
    as the width allows. (Rich's own measuring and collapsing, private but stable, decide
    whether it would happen.)
    """
    columns = table.columns
    ranges = [table._measure_column(console, console.options.update_width(10_000), c)
              for c in columns]
    extra = table._extra_width
    maxima = [r.maximum for r in ranges]
    if sum(maxima) + extra <= width:
        return
    wraps = [c.width is None and not c.no_wrap for c in columns]
    collapsed = table._collapse_widths(maxima, wraps, width - extra)
    if all(w >= r.minimum for w, r, wrap in zip(collapsed, ranges, wraps, strict=True) if wrap):
        return
    room = width - extra - sum(m for m, wrap in zip(maxima, wraps, strict=True) if not wrap)

    def share(level: int) -> list[int]:
        return [min(r.maximum, max(level, r.minimum)) for r in ranges]

    # No level fits when the prose columns' minimums alone pass the room (a 10,000-character
    # word in a cell): each then gets its minimum, and the table prints wider.
    level = max((lv for lv in range(max(maxima, default=0) + 1)
                 if sum(w for w, wrap in zip(share(lv), wraps, strict=True) if wrap) <= room),
                default=0)
    for column, size, wrap in zip(columns, share(level), wraps, strict=True):
        if wrap:
            column.width = size - table._get_padding_width(column._index)


def output_width(console: Console, parts: Sequence[RenderableType]) -> int:
    """The width to print `parts` at (see the module's docstring)."""
    if console.is_terminal:
        return console.width
    columns = env_columns()  # bounded: a 5,000-digit COLUMNS is one line, exit 2
    if columns is not None:
        return columns
    wide = console.options.update_width(10_000)
    natural = max((Measurement.get(console, wide, part).maximum for part in parts
                   if isinstance(part, RichTable)), default=FALLBACK_WIDTH)
    return max(FALLBACK_WIDTH, min(natural, WIDEST_FALLBACK))


def data_console(file: Any = None) -> Console:
    """The one console for results: markup, emoji and highlighting off, so that a name such
    as `x[bold]y[/bold]` prints as it is; styles come only from explicit Text."""
    return Console(file=file, markup=False, emoji=False, highlight=False)


def print_parts(console: Console, parts: Sequence[RenderableType]) -> None:
    """Print each part at the output width; a table that cannot fit is printed wider."""
    width = output_width(console, parts)
    dropped: list[str] = []
    for part in parts:
        console.width = width
        if isinstance(part, RichTable):
            console.width, dropped = fit_table(console, part, width)
            console.print(part)
            console.width = width
            if dropped:
                names = ", ".join(" ".join(h.split()) for h in dropped)
                console.print(Text(f"left out to fit {width} columns: {names} (a wider "
                                   "terminal or COLUMNS shows them; JSON has every figure)",
                                   style="dim"))
        elif not (isinstance(part, Footnote) and part.column in dropped):
            console.print(part)
