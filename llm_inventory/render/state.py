"""Tables for persistent-state results."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from llm_inventory.engine import kinds as layer_kinds
from llm_inventory.engine.state import KindState, StateResult
from llm_inventory.units import UnitSystem, format_bytes


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def exact(n: int) -> str:
    return f"{n:,} B"


def state_tables(result: StateResult, units: UnitSystem) -> list[Table | Text]:
    """Summary table (exact bytes beside human sizes), then a row per kind when mixed."""
    layers = result.layers
    title = (
        f"Persistent state · {_plural(layers, 'layer')} · {result.tokens:,} tokens × "
        f"{_plural(result.sequences, 'sequence')} · {result.dtype}"
        + (f" · blocks of {result.block_size}" if result.block_size else "")
    )
    summary = Table(show_header=True)
    summary.add_column("", overflow="fold")  # labels are prose: they wrap, the figures not
    summary.add_column("bytes", justify="right")
    summary.add_column("size", justify="right")

    def row(label: str, value: int) -> None:
        summary.add_row(label, exact(value), format_bytes(value, units))

    if result.bytes_per_token_per_layer is not None:
        row("per token per layer", result.bytes_per_token_per_layer)
    row(f"per token ({_plural(layers, 'layer')})", result.bytes_per_token)
    if result.fixed_bytes_per_sequence:
        row("fixed per sequence", result.fixed_bytes_per_sequence)
    held = {k.tokens_held for k in result.kinds if layer_kinds.get(k.kind).grows}
    note = f", {held.pop():,} held" if len(held) == 1 and result.tokens not in held else ""
    row(f"per sequence ({result.tokens:,} tokens{note})", result.bytes_per_sequence)
    row(f"total ({_plural(result.sequences, 'sequence')})", result.total_bytes)
    device = result.per_device
    where = f"tp {device.tp}, pp {device.pp}"
    if device.pp > 1:
        where += f", stage {device.stage} of {device.stage_layers} layers"
    if device.kv_heads_per_device is not None and device.tp > 1:
        where += f", {_plural(device.kv_heads_per_device, 'KV head')}"
        if device.replicated:
            where += " (replicated)"
    row(f"per device ({where})", device.bytes)

    parts: list[Table | Text] = [Text(title, style="bold")]
    if result.estimated:
        parts.append(Text(result.estimated, style="bold"))
    parts.append(summary)
    if len(result.kinds) > 1:
        parts.append(Text("By layer kind", style="bold"))
        kinds = Table()
        for name in ("kind", "layers", "per token", "tokens held", "per sequence"):
            kinds.add_column(name, justify="left" if name == "kind" else "right")
        for k in result.kinds:
            kind = layer_kinds.get(k.kind)
            growing = kind.grows
            kinds.add_row(
                _label(k),
                f"{k.layers:,}",
                format_bytes(k.bytes_per_token, units) if growing else "fixed",
                f"{k.tokens_held:,}" if kind.holds_tokens else "—",
                format_bytes(k.bytes_per_sequence, units),
            )
        parts.append(kinds)
    for k in result.kinds:
        prefix = f"{_label(k)}: " if len(result.kinds) > 1 else ""
        parts.append(Text(f"release {prefix}{k.release}", style="dim"))
    return parts


def _label(k: KindState) -> str:
    return layer_kinds.get(k.kind).label(k.window)
