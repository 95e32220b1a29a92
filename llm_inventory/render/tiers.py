"""Offload and KV tiers in a placement table: a note per plan and a bar of where each byte
of the binding device lives (GPU, host memory, disk)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from llm_inventory.engine.placement.models import Plan
from llm_inventory.units import UnitSystem, format_bytes


def tiers_note(index: int, plan: Plan, units: UnitSystem) -> str | None:
    """One line: what each device keeps off the GPU, a node's host memory, the link's time."""
    t = plan.tiers
    if t is None:
        return None
    d = t.per_device

    def size(n: int) -> str:
        return format_bytes(n, units)

    parts = []
    if d.host_weight_bytes:
        parts.append(f"weights {size(d.host_weight_bytes)}")
    if d.host_kv_bytes:
        tokens = f"{d.host_kv_tokens:,} tokens" + ("" if t.kv_host_exact else ", estimate")
        parts.append(f"KV {size(d.host_kv_bytes)} ({tokens})")
    text = f"{index}. host memory per device: " + (", ".join(parts) or "none")
    if d.disk_kv_bytes:
        text += f"; disk {size(d.disk_kv_bytes)}"
    node = f"; per node ({t.devices_per_node}) {size(t.host_bytes_per_node)}"
    if t.host_memory_bytes is not None:
        node += (f" of {size(t.host_memory_bytes)}"
                 + (" (fits)" if t.host_fits else " (does NOT fit)"))
    else:
        node += " (host RAM not known: not checked)"
    text += node
    if t.reload_tokens and t.reload_s is not None:
        text += (f"; reloading {t.reload_tokens:,} prefix tokens adds "
                 f"{t.reload_s * 1e3:,.1f} ms to the TTFT (estimate)")
    if t.weight_stream_s:
        text += (f"; the moved weights cross the host link every forward: "
                 f"+{t.weight_stream_s * 1e3:,.1f} ms a step (estimate)")
    return text


def tier_bars(rows: Sequence[tuple[str, Plan]], width: int = 32) -> Table | None:
    """A bar per plan that keeps bytes off the GPU: the binding device's bytes on the GPU,
    in host memory and on disk, in proportion."""
    from llm_inventory.render.charts import bar

    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("where bytes live", no_wrap=True)
    table.add_column("█ GPU ▓ host ▒ disk", no_wrap=True)
    found = False
    for label, plan in rows:
        t, d, h = plan.tiers, plan.per_device, plan.host
        if d is None or (t is None and (h is None or not h.total_bytes)):
            continue
        gpu = d.weight_bytes + d.reserve_bytes + max(0, d.kv_pool_bytes)
        # an engine's own host share (llama.cpp's -ngl, --n-cpu-moe, -nkvo) and the tiers
        host = (t.per_device.host_bytes if t is not None else 0) + (
            h.total_bytes if h is not None else 0)
        parts = [gpu, host, t.per_device.disk_kv_bytes if t is not None else 0]
        table.add_row(label, bar(parts, sum(parts), width))
        found = True
    return table if found else None
