"""`inventory sweep` as tables: the fit grid first, every cell's figures on request."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.sweep import SweepCell, SweepResult
from llm_inventory.units import format_bytes


def _context(tokens: int) -> str:
    for size, suffix in ((2**20, "M"), (2**10, "K"), (10**6, "m"), (10**3, "k")):
        if tokens >= size and tokens % size == 0:
            return f"{tokens // size:,}{suffix}"
    return f"{tokens:,}"


def _row_label(cell: SweepCell, result: SweepResult) -> str:
    parts = [_context(cell.context)]
    if len(result.kv_dtypes) > 1:
        parts.append(f"KV {cell.kv_dtype}")
    if len(result.dtypes) > 1:
        parts.append(cell.dtype)
    if len(result.engines) > 1:
        parts.append(cell.engine)
    return " · ".join(parts)


def _grid_cell(cell: SweepCell) -> Text:
    held = "—" if cell.total_concurrency is None else f"{cell.total_concurrency:,.0f}"
    if cell.fits:
        return Text(f"✓ {held}", style="green")
    return Text(f"✗ {held}", style="red")


def sweep_tables(result: SweepResult, details: bool = False) -> list[Table | Text]:
    parts: list[Table | Text] = [Text(
        f"{result.model} on {result.count} × {result.device} "
        f"({format_bytes(result.device_memory_bytes)} each): {len(result.cells):,} points",
        style="bold")]
    grid = Table(title="fits? · requests held at the context")
    grid.add_column("context", overflow="fold")
    for users in result.concurrencies:
        grid.add_column(f"{users:,}\nusers", justify="right")
    rows: dict[str, list[SweepCell]] = {}
    for cell in result.cells:
        rows.setdefault(_row_label(cell, result), []).append(cell)
    for label, cells in rows.items():
        grid.add_row(label, *[_grid_cell(c) for c in cells])
    parts.append(grid)
    parts.append(Text("✓ fits, ✗ does not; the figure: requests at the context every engine "
                      "of the best plan holds together (--details or JSON for each plan)",
                      style="dim"))
    if details:
        table = Table(title="each point's best plan")
        for name in ("point", "plan", "KV tokens", "TTFT/TPOT\nms~", "tok/s~", "$/Mtok"):
            table.add_column(name, justify="left" if name in ("point", "plan") else "right",
                             overflow="fold")
        for cell in result.cells:
            times = "—" if cell.ttft_s is None or cell.tpot_s is None else \
                f"{cell.ttft_s * 1000:,.0f}/{cell.tpot_s * 1000:,.1f}"
            table.add_row(
                f"{_row_label(cell, result)} × {cell.concurrency:,}",
                (cell.plan or "—") + ("" if cell.fits else " ✗"),
                "—" if cell.kv_tokens is None else f"{cell.kv_tokens:,}", times,
                "—" if cell.tokens_per_s is None else f"{cell.tokens_per_s:,.0f}",
                "—" if cell.price_per_million_tokens is None else
                f"{cell.price_per_million_tokens:,.2f}")
        parts.append(table)
        if result.price_source:
            parts.append(Text(f"$: {result.price_source}", style="dim"))
    if result.cells:
        trust = result.cells[0].trust
        parts.append(Text("trust: " + "; ".join(f"{group.replace('_', ' ')} {t.label()}"
                                                for group, t in trust.items()), style="dim"))
    return parts
