"""`inventory pack` as tables."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.packing import PackResult
from llm_inventory.units import format_bytes


def pack_tables(result: PackResult) -> list[Table | Text]:
    placed = len(result.instances)
    parts: list[Table | Text] = [Text(
        f"{placed} of {placed + len(result.unplaced)} models on {result.count} × "
        f"{result.device} ({format_bytes(result.device_memory_bytes)} each), "
        f"{result.engine}", style="bold")]
    table = Table()
    table.add_column("model", overflow="fold")
    table.add_column("devices")
    table.add_column("split")
    table.add_column("memory\nfraction", justify="right")
    table.add_column("starts\nafter", justify="right")
    table.add_column("holds", justify="right")
    table.add_column("held/\nasked", justify="right")
    for i in result.instances:
        held = "—" if i.max_concurrency is None else \
            f"{i.max_concurrency:,.1f}/{i.concurrency:,}"
        table.add_row(i.model, ",".join(map(str, i.devices)), f"tp{i.tp} pp{i.pp}",
                      f"{i.memory_fraction:.2f}", format_bytes(i.others_bytes) if i.shared
                      else "—", format_bytes(i.footprint_bytes), held)
    parts.append(table)
    for why in result.unplaced:
        parts.append(Text(f"✗ {why}", style="red"))
    free = ", ".join(f"{index}: {format_bytes(b)}" for index, b in enumerate(result.free_bytes))
    parts.append(Text(f"left free per device: {free}", style="dim"))
    parts.append(Text("memory fraction: the engine's own flag for each instance (vLLM's "
                      "gpu_memory_utilization); starts after: what instances started "
                      "before it hold on its device, so start them in this order; holds: "
                      "its budget plus a 300 MiB CUDA context (estimate)", style="dim"))
    parts.append(Text("trust: " + "; ".join(f"{group} {t.label()}"
                                            for group, t in result.trust.items()),
                      style="dim"))
    return parts
