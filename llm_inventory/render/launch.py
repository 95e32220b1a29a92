"""Tables for `inventory launch`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine.launch import LaunchResult
from llm_inventory.units import UnitSystem, format_bytes


def launch_tables(result: LaunchResult, units: UnitSystem) -> list[Table | Text]:
    c, plan = result.command, result.plan
    split = f"tp{c.tp} pp{c.pp}" + (f" ep{c.ep}" if c.ep else "") + f" ×{plan.dp}"
    head = Text(f"{result.label}: {result.model} on {result.count} × {result.device} "
                f"({format_bytes(result.device_memory_bytes, units)} each) as {split}, "
                f"{result.context:,} tokens", style="bold")
    parts: list[Table | Text] = [head]
    parts.append(Text("understood: " + (", ".join(c.understood) or "no flags (defaults)")))
    if c.ignored:
        parts.append(Text("ignored (not modelled): " + ", ".join(c.ignored), style="dim"))
    d = plan.per_device
    if d is not None:
        table = Table(title="per device (the binding worker)")
        for name in ("weights", "reserve*", "KV pool", "KV tokens", "conc.", "total"):
            table.add_column(name, justify="right", no_wrap=name == "total")
        total = plan.total_concurrency
        table.add_row(format_bytes(d.weight_bytes, units), format_bytes(d.reserve_bytes, units),
                      format_bytes(d.kv_pool_bytes, units), f"{d.kv_capacity_tokens:,}",
                      f"{plan.max_concurrency:,.2f}" if plan.max_concurrency is not None
                      else "—",
                      "—" if total is None else f"×{plan.engines} {total:,.2f}"
                      if plan.engines > 1 else f"{total:,.2f}")
        parts.append(table)
        if plan.host is not None and plan.host.total_bytes:
            h = plan.host
            parts.append(Text(f"host RAM {format_bytes(h.total_bytes, units)}: weights "
                              f"{format_bytes(h.weight_bytes, units)}, KV "
                              f"{format_bytes(h.kv_bytes, units)}, compute "
                              f"{format_bytes(h.compute_bytes, units)}"))
        if plan.tiers is not None:
            from llm_inventory.render.tiers import tiers_note

            note = tiers_note(1, plan, units)
            if note is not None:
                parts.append(Text(note.removeprefix("1. ")))
        if d.state_slots is not None:
            from llm_inventory.render.placement import state_slots_note

            parts.append(Text(state_slots_note(d, plan.max_concurrency, result.context, units)))
        if d.lora is not None or d.multimodal is not None:
            from llm_inventory.render.features import feature_lines

            parts.append(Text("\n".join(feature_lines(d, units))))
    if plan.speculative is not None:
        from llm_inventory.render.speculative import speculative_text

        parts.append(speculative_text(plan, units))
    if result.startup:
        parts.append(Text(f"{result.label} will print:", style="bold"))
        parts.append(Text("\n".join(f"  {line}" for line in result.startup)))
    if result.startup_error:
        parts.append(Text(f"{result.label} will stop with:", style="bold red"))
        parts.append(Text(f"  {result.startup_error}", style="red"))
    if result.longest_context:
        parts.append(Text(f"the longest context that fits: {result.longest_context:,} tokens",
                          style="yellow"))
    elif result.longest_context == 0:
        parts.append(Text("no context fits: the weights and the reserve leave no room for the "
                          "KV cache", style="yellow"))
    local = result.trust.get("reserve")
    if local is not None and local.kind == "calibrated on your log":
        parts.append(Text(f"* the reserve is {local.basis}; conc.: requests at the context "
                          "one engine holds, total: every engine", style="dim"))
    else:
        parts.append(Text("* the reserve (activation peak, non-torch memory, CUDA graphs "
                          "where the engine subtracts them) is an estimate; conc.: requests "
                          "at the context one engine holds, total: every engine",
                          style="dim"))
    if result.trust:
        parts.append(Text("trust: " + "; ".join(f"{group.replace('_', ' ')} {t.label()}"
                                                for group, t in result.trust.items()),
                          style="dim"))
    return parts
