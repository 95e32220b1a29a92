"""Tables for persistent-state results: through Rich (`state_tables`), or for a uniform
stack from flags as plain text without importing Rich or the engine's models
(`plain_state`, `render/plain.py`); both print the same summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from llm_inventory.units import UnitSystem, format_bytes

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from llm_inventory.engine.state import KindState, StateResult


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def exact(n: int) -> str:
    return f"{n:,} B"


def _summary(doc: Mapping[str, Any], units: UnitSystem,
             grows: Callable[[str], bool]) -> tuple[str, list[tuple[str, str, str]]]:
    """The title and the summary rows (label, exact bytes, size) of a `StateResult`'s JSON
    form; `grows(kind)` says whether a kind's state grows with the sequence."""
    layers, tokens, sequences = doc["layers"], doc["tokens"], doc["sequences"]
    title = (
        f"Persistent state · {_plural(layers, 'layer')} · {tokens:,} tokens × "
        f"{_plural(sequences, 'sequence')} · {doc['dtype']}"
        + (f" · blocks of {doc['block_size']}" if doc["block_size"] else "")
    )
    rows: list[tuple[str, str, str]] = []

    def row(label: str, value: int) -> None:
        rows.append((label, exact(value), format_bytes(value, units)))

    if doc["bytes_per_token_per_layer"] is not None:
        row("per token per layer", doc["bytes_per_token_per_layer"])
    row(f"per token ({_plural(layers, 'layer')})", doc["bytes_per_token"])
    if doc["fixed_bytes_per_sequence"]:
        row("fixed per sequence", doc["fixed_bytes_per_sequence"])
    held = {k["tokens_held"] for k in doc["kinds"] if grows(k["kind"])}
    note = f", {held.pop():,} held" if len(held) == 1 and tokens not in held else ""
    row(f"per sequence ({tokens:,} tokens{note})", doc["bytes_per_sequence"])
    row(f"total ({_plural(sequences, 'sequence')})", doc["total_bytes"])
    device = doc["per_device"]
    where = f"tp {device['tp']}, pp {device['pp']}"
    if device["pp"] > 1:
        where += f", stage {device['stage']} of {device['stage_layers']} layers"
    if device["kv_heads_per_device"] is not None and device["tp"] > 1:
        where += f", {_plural(device['kv_heads_per_device'], 'KV head')}"
        if device["replicated"]:
            where += " (replicated)"
    row(f"per device ({where})", device["bytes"])
    return title, rows


HEADERS = ("", "bytes", "size")
JUSTIFY = ("left", "right", "right")
FOLD = (True, False, False)  # the labels are prose: they wrap, the figures never


def state_tables(result: StateResult, units: UnitSystem) -> list[Table | Text]:
    """Summary table (exact bytes beside human sizes), then a row per kind when mixed."""
    from rich.table import Table
    from rich.text import Text

    from llm_inventory.engine import kinds as layer_kinds

    title, rows = _summary(result.model_dump(mode="json"), units,
                           lambda kind: layer_kinds.get(kind).grows)
    summary = Table(show_header=True)
    for header, justify, fold in zip(HEADERS, JUSTIFY, FOLD, strict=True):
        summary.add_column(header, justify=justify,  # type: ignore[arg-type]
                           overflow="fold" if fold else "ellipsis")
    for cells in rows:
        summary.add_row(*cells)

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


def plain_state(doc: Mapping[str, Any], units: UnitSystem, stream: Any) -> str | None:
    """What `state_tables` prints for the JSON form of a one-kind `StateResult` of a kind
    `engine/kinds/uniform.py` sizes (each of which grows with the sequence), without Rich;
    None where `render/plain.py` does not cover the output (Rich prints it then)."""
    from llm_inventory.engine.kinds.uniform import flag_kind
    from llm_inventory.render.plain import PlainTable, render

    if doc["estimated"] or len(doc["kinds"]) != 1 or not flag_kind(doc["kinds"][0]["kind"]):
        return None
    title, rows = _summary(doc, units, lambda kind: flag_kind(kind) is not None)
    table = PlainTable(HEADERS, JUSTIFY, FOLD)
    for cells in rows:
        table.add_row(*cells)
    return render([title, table, f"release {doc['kinds'][0]['release']}"], stream)


def _label(k: KindState) -> str:
    from llm_inventory.engine import kinds as layer_kinds

    return layer_kinds.get(k.kind).label(k.window)
