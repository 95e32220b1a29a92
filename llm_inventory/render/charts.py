"""Pictures in the terminal: memory bars and a scatter of points, as Rich renderables.

Characters carry the meaning (colour only adds to it), so the pictures read the same with
NO_COLOR, in a pipe and in a test.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

#: (character, style) per memory part, in bar order.
PARTS = (("█", "cyan"), ("▓", "magenta"), ("▒", "green"), ("░", "dim"))
#: the same with a speculative drafter's weights after the target's
DRAFTER_PARTS = (("█", "cyan"), ("▚", "yellow"), ("▓", "magenta"), ("▒", "green"),
                 ("░", "dim"))


def bar(parts: Sequence[int], total: int, width: int = 32,
        chars: Sequence[tuple[str, str]] = PARTS) -> Text:
    """A bar of `width` cells split in proportion to `parts` of `total` (weights, reserve, KV,
    free); every non-zero part keeps at least one cell."""
    cells = [0] * len(parts)
    if total > 0:
        # Parts may add up to far more than `total` (weights larger than the device): each
        # is capped at the bar's width so that trimming the excess takes a bounded loop.
        raw = [min(width, max(0, p) * width / total) for p in parts]
        cells = [max(1, round(r)) if p > 0 else 0 for p, r in zip(parts, raw, strict=True)]
        while sum(cells) > width:
            cells[cells.index(max(cells))] -= 1
        if sum(cells) < width and cells:
            cells[-1] += width - sum(cells)
    text = Text()
    for (char, style), count in zip(chars, cells, strict=False):
        text.append(char * count, style=style)
    return text


def memory_bars(rows: Sequence[tuple[str, Sequence[int], int]], width: int = 32,
                drafter: bool = False) -> Table:
    """One bar per (label, parts, total) row, with its legend as the column header; with
    `drafter` each row's parts hold a speculative drafter's weights after the target's."""
    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("memory per device", no_wrap=True)
    table.add_column("█ weights ▚ drafter ▓ reserve ▒ KV pool ░ free" if drafter else
                     "█ weights ▓ reserve ▒ KV pool ░ free", no_wrap=True)
    for label, parts, total in rows:
        table.add_row(label, bar(parts, total, width, DRAFTER_PARTS if drafter else PARTS))
    return table


def scatter(points: Sequence[tuple[float, float, str]], *, width: int = 56, height: int = 14,
            x_label: str, y_label: str, front: Sequence[tuple[float, float]] = ()) -> Text:
    """Points (x, y, mark) on a character grid, axes from zero; points of `front` are drawn
    with their own marks and later ones win a cell."""
    xs = [p[0] for p in points] or [1.0]
    ys = [p[1] for p in points] or [1.0]
    x_max = max(xs) * 1.05 or 1.0
    y_max = max(ys) * 1.05 or 1.0
    grid = [[" "] * width for _ in range(height)]
    for x, y, mark in points:
        col = min(width - 1, int(x / x_max * (width - 1)))
        row = height - 1 - min(height - 1, int(y / y_max * (height - 1)))
        grid[row][col] = mark
    label = f"{y_max:,.0f}"
    pad = len(label)
    lines = []
    for i, row_cells in enumerate(grid):
        axis = label if i == 0 else ("0".rjust(pad) if i == height - 1 else " " * pad)
        lines.append(f"{axis} │{''.join(row_cells)}")
    lines.append(" " * pad + " └" + "─" * width)
    right = f"{x_max:,.0f}"
    lines.append(" " * pad + "  0" + right.rjust(width - 1))
    lines.append(" " * pad + f"  x: {x_label} · y: {y_label}")
    return Text("\n".join(lines))
